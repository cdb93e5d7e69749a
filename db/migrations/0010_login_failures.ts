import { sql, type Kysely } from 'kysely'

export async function up (db: Kysely<any>): Promise<void> {
  // Failed sign-ins per account, from any address: what limits guesses when many addresses (or one
  // proxy's) try one account. Rows are deleted once they leave the window that counts them.
  await db.schema.createTable('login_failures')
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('failed_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('login_failures_email_failed_at_idx').on('login_failures').columns(['email', 'failed_at']).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('login_failures').ifExists().execute()
}
