import { sql, type Kysely } from 'kysely'

export async function up (db: Kysely<any>): Promise<void> {
  // A sign-in attempt is recorded as a failure before its password is checked, and taken back by
  // its id once the password matched: concurrent guesses then count one after the other.
  await db.schema.alterTable('login_failures').addColumn('id', 'bigint', (c) => c.generatedAlwaysAsIdentity().primaryKey()).execute()
  // Failed sign-ins of a client that presented a device token (OWASP's device cookies): they count
  // against that token, not its account. `device` is the sha256 of the token's nonce, never the token.
  await db.schema.createTable('login_failures_by_device')
    .addColumn('id', 'bigint', (c) => c.generatedAlwaysAsIdentity().primaryKey())
    .addColumn('device', 'text', (c) => c.notNull())
    .addColumn('failed_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('login_failures_by_device_device_failed_at_idx').on('login_failures_by_device').columns(['device', 'failed_at']).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('login_failures_by_device').ifExists().execute()
  await db.schema.alterTable('login_failures').dropColumn('id').execute()
}
