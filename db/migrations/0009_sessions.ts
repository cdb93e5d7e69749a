import { sql, type Kysely } from 'kysely'

export async function up (db: Kysely<any>): Promise<void> {
  // An access token carries its user's token version when it was issued; raising the version
  // ends every earlier token. Both numbers come from this table, so no two clocks are compared.
  await db.schema.alterTable('users').addColumn('token_version', 'integer', (c) => c.notNull().defaultTo(0)).execute()
  // A `user:<id>` row says: that user's tokens of a lower version are revoked.
  await db.schema.alterTable('revoked_tokens').addColumn('token_version', 'integer').execute()

  // The outbox no longer holds a one-time token in clear: the body has a placeholder and the token
  // is sealed with a key only the API (and the mailer) derive. Messages that still carry a token
  // in clear are dropped, and their tokens spent: the user asks again.
  await sql`update user_tokens set used_at = now() where used_at is null`.execute(db)
  await sql`delete from email_outbox`.execute(db)
  await db.schema.alterTable('email_outbox')
    .addColumn('user_id', 'bigint', (c) => c.references('users.id').onDelete('cascade'))
    .addColumn('sealed_token', 'text')
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute()
  await db.schema.createIndex('email_outbox_user_id_idx').on('email_outbox').column('user_id').execute()
  await db.schema.createIndex('email_outbox_expires_at_idx').on('email_outbox').column('expires_at').execute()
  await db.schema.createIndex('user_tokens_expires_at_idx').on('user_tokens').column('expires_at').execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('user_tokens_expires_at_idx').ifExists().execute()
  await db.schema.alterTable('email_outbox').dropColumn('expires_at').dropColumn('sealed_token').dropColumn('user_id').execute()
  await db.schema.alterTable('revoked_tokens').dropColumn('token_version').execute()
  await db.schema.alterTable('users').dropColumn('token_version').execute()
}
