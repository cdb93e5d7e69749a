import { sql, type Kysely } from 'kysely'

export async function up (db: Kysely<any>): Promise<void> {
  // Access tokens revoked before they expire (logout), by `jti`. Rows are useless once
  // `expires_at` has passed and are deleted then; every instance keeps a copy in memory.
  await db.schema.createTable('revoked_tokens')
    .addColumn('jti', 'text', (c) => c.primaryKey())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    // clock_timestamp(), not now(): the poll reads rows newer than the last one it saw, so the
    // time should be as close to the commit as it can be.
    .addColumn('revoked_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`clock_timestamp()`))
    .execute()
  await db.schema.createIndex('revoked_tokens_revoked_at_idx').on('revoked_tokens').column('revoked_at').execute()
  await db.schema.createIndex('revoked_tokens_expires_at_idx').on('revoked_tokens').column('expires_at').execute()

  // One-time tokens (verify an email, reset a password): only their sha256 is stored.
  await db.schema.createTable('user_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull().check(sql`kind in ('verify_email', 'reset_password')`))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('user_tokens_user_id_kind_idx').on('user_tokens').columns(['user_id', 'kind']).execute()

  // What a mailer would send; the plaintext token exists only inside `body`.
  await db.schema.createTable('email_outbox')
    .addColumn('id', 'bigint', (c) => c.primaryKey().generatedAlwaysAsIdentity())
    .addColumn('recipient', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('sent_at', sql`timestamptz(3)`)
    .execute()
  await sql`create index email_outbox_unsent_idx on email_outbox (id) where sent_at is null`.execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  for (const table of ['email_outbox', 'user_tokens', 'revoked_tokens']) {
    await db.schema.dropTable(table).ifExists().execute()
  }
}
