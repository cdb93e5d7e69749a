import { sql } from 'kysely'
import type { Db } from './connect.js'

export interface Revocation {
  jti: string
  expires_at: Date
  revoked_at: Date
}

/** Revokes an access token until it expires; revoking it twice is harmless. */
export async function revokeToken (db: Db, jti: string, expiresAt: Date): Promise<void> {
  await db.insertInto('revoked_tokens').values({ jti, expires_at: expiresAt })
    .onConflict((oc) => oc.column('jti').doNothing())
    .execute()
}

/** Revocations of tokens not yet expired, revoked after `since` (all of them without it). */
export async function revocationsSince (db: Db, since: Date | undefined): Promise<Revocation[]> {
  let query = db.selectFrom('revoked_tokens').select(['jti', 'expires_at', 'revoked_at']).where('expires_at', '>', sql<Date>`now()`)
  if (since !== undefined) query = query.where('revoked_at', '>', since)
  return query.execute()
}

export async function isRevoked (db: Db, jti: string): Promise<boolean> {
  const row = await db.selectFrom('revoked_tokens').select('jti').where('jti', '=', jti).executeTakeFirst()
  return row !== undefined
}

/** Forgets revocations of tokens that have expired anyway. */
export async function deleteExpiredRevocations (db: Db): Promise<void> {
  await db.deleteFrom('revoked_tokens').where('expires_at', '<', sql<Date>`now() - interval '1 minute'`).execute()
}
