import { sql, type Transaction } from 'kysely'
import type { Db } from './connect.js'
import type { Database } from './types.js'

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

/**
 * The row that revokes every token of a user issued before its `revoked_at` (a token's own id is a
 * UUID, never this).
 */
export const everyTokenOf = (userId: number): string => `user:${userId}`

/** The user whose every earlier token the row revokes, or undefined for a token's own row. */
export function userOfRow (jti: string): number | undefined {
  return jti.startsWith('user:') ? Number(jti.slice(5)) : undefined
}

/**
 * Revokes every access token of the user issued until now (after a password reset, say); they
 * have all expired by `expiresAt`. Run it in the transaction that changes what the tokens stood for.
 */
export async function revokeTokensOf (db: Db | Transaction<Database>, userId: number, expiresAt: Date): Promise<void> {
  await db.insertInto('revoked_tokens').values({ jti: everyTokenOf(userId), expires_at: expiresAt })
    .onConflict((oc) => oc.column('jti').doUpdateSet({ revoked_at: sql<Date>`clock_timestamp()`, expires_at: expiresAt }))
    .execute()
}

/** Revocations of tokens not yet expired, revoked after `since` (all of them without it). */
export async function revocationsSince (db: Db, since: Date | undefined): Promise<Revocation[]> {
  let query = db.selectFrom('revoked_tokens').select(['jti', 'expires_at', 'revoked_at']).where('expires_at', '>', sql<Date>`now()`)
  if (since !== undefined) query = query.where('revoked_at', '>', since)
  return query.execute()
}

/** Whether the token `jti` of `userId`, issued at `issuedAt` (seconds), is revoked: by itself or with all of its user's. */
export async function isRevoked (db: Db, jti: string, userId: number, issuedAt: number): Promise<boolean> {
  const row = await db.selectFrom('revoked_tokens').select('jti')
    .where((eb) => eb.or([
      eb('jti', '=', jti),
      eb.and([eb('jti', '=', everyTokenOf(userId)), eb('revoked_at', '>=', new Date((issuedAt + 1) * 1000))])
    ]))
    .executeTakeFirst()
  return row !== undefined
}

/** Forgets revocations of tokens that have expired anyway. */
export async function deleteExpiredRevocations (db: Db): Promise<void> {
  await db.deleteFrom('revoked_tokens').where('expires_at', '<', sql<Date>`now() - interval '1 minute'`).execute()
}
