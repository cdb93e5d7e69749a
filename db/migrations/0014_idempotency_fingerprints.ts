import { sql, type Kysely } from 'kysely'

// An Idempotency-Key's fingerprint was the plain SHA-256 of the request's body, a sign-up's password
// included: kept 24 h, it let a copy of the table test password guesses at hash speed. Fingerprints
// are now HMACs without the body's secrets (plugins/idempotency.ts). The old ones are withdrawn: a
// retry with such a key is answered 422 (never a second write), and nothing derived from a password stays.
export async function up (db: Kysely<any>): Promise<void> {
  await sql`update idempotency_keys set request_hash = 'withdrawn'`.execute(db)
}

// Nothing to give back: the withdrawn fingerprints are gone.
export async function down (): Promise<void> {}
