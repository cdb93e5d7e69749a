import { sql } from 'kysely'
import type { Db } from './connect.js'
import { KEY_LIFETIME_HOURS } from './idempotency.js'

/**
 * Deletes what has outlived its use: sign-in failures (of accounts and of device tokens) past the window that counts them, revocations of tokens that have expired anyway, one-time
 * tokens and queued emails past their expiry, idempotency records past their lifetime. What
 * belongs to a user goes with the user already (cascades, `deleteUser`).
 */
export async function purgeExpired (db: Db, loginFailureWindowSeconds: number): Promise<void> {
  await db.deleteFrom('login_failures').where('failed_at', '<', sql<Date>`now() - make_interval(secs => ${loginFailureWindowSeconds})`).execute()
  await db.deleteFrom('login_failures_by_device').where('failed_at', '<', sql<Date>`now() - make_interval(secs => ${loginFailureWindowSeconds})`).execute()
  await db.deleteFrom('revoked_tokens').where('expires_at', '<', sql<Date>`now() - interval '1 minute'`).execute()
  await db.deleteFrom('email_outbox').where('expires_at', '<', sql<Date>`now()`).execute()
  // Kept an hour past expiry: the hourly limit of one-time emails counts them.
  await db.deleteFrom('user_tokens').where('expires_at', '<', sql<Date>`now() - interval '1 hour'`).execute()
  await db.deleteFrom('idempotency_keys').where('created_at', '<', sql<Date>`now() - make_interval(hours => ${KEY_LIFETIME_HOURS})`).execute()
}
