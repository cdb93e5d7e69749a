import { sql, type Transaction } from 'kysely'
import type { Db } from './connect.js'
import type { TandemDatabase } from './types.js'

export interface Revocation {
  jti: string
  expires_at: Date
  revoked_at: Date
  /** On a user's row: their tokens below this version are revoked. */
  token_version: number | null
}

/** Revokes an access token until it expires; revoking it twice is harmless. */
export async function revokeToken (db: Db, jti: string, expiresAt: Date): Promise<void> {
  await db.insertInto('revoked_tokens').values({ jti, expires_at: expiresAt })
    .onConflict((oc) => oc.column('jti').doNothing())
    .execute()
}

/** The row that revokes a user's tokens below a version (a token's own id is a UUID, never this). */
export const everyTokenOf = (userId: number): string => `user:${userId}`

/** The user whose earlier tokens the row revokes, or undefined for a token's own row. */
export function userOfRow (jti: string): number | undefined {
  return jti.startsWith('user:') ? Number(jti.slice(5)) : undefined
}

/**
 * Ends every access token the user holds (after a password reset, say, or before deleting them):
 * raises their token version and records the new one, until `expiresAt`, when every earlier
 * token has expired anyway. Run it in the transaction that changes what the tokens stood for.
 */
export async function revokeTokensOf (db: Db | Transaction<TandemDatabase>, userId: number, expiresAt: Date): Promise<void> {
  const raised = await db.updateTable('users').set({ token_version: sql<number>`token_version + 1` })
    .where('id', '=', userId).returning('token_version').executeTakeFirst()
  if (raised === undefined) return
  // Kept as long as the longest lifetime any instance gives its tokens (as the triggers of migration 0011 keep theirs).
  const longest = sql<Date>`greatest(${expiresAt}, clock_timestamp() + make_interval(secs => (select seconds from token_lifetime)) + interval '1 hour')`
  await db.insertInto('revoked_tokens').values({ jti: everyTokenOf(userId), expires_at: longest, token_version: raised.token_version })
    .onConflict((oc) => oc.column('jti').doUpdateSet({
      revoked_at: sql<Date>`clock_timestamp()`,
      expires_at: sql<Date>`greatest(revoked_tokens.expires_at, excluded.expires_at)`,
      token_version: sql<number>`greatest(revoked_tokens.token_version, excluded.token_version)`
    }))
    .execute()
}

/**
 * Records that this instance's tokens live `seconds`: the database ends a user's tokens itself when
 * their role changes (migration 0011), for as long as the longest lifetime recorded.
 */
export async function recordTokenLifetime (db: Db, seconds: number): Promise<void> {
  await db.insertInto('token_lifetime').values({ seconds })
    .onConflict((oc) => oc.column('one_row').doUpdateSet({ seconds: sql<number>`greatest(token_lifetime.seconds, excluded.seconds)` }))
    .execute()
}

/** Revocations of tokens not yet expired, revoked after `since` (all of them without it). */
export async function revocationsSince (db: Db, since: Date | undefined): Promise<Revocation[]> {
  let query = db.selectFrom('revoked_tokens').select(['jti', 'expires_at', 'revoked_at', 'token_version']).where('expires_at', '>', sql<Date>`now()`)
  if (since !== undefined) query = query.where('revoked_at', '>', since)
  return query.execute()
}

/** Whether the token `jti` of `userId`, of token version `version`, is revoked: by itself or with its user's earlier ones. */
export async function isRevoked (db: Db, jti: string, userId: number, version: number): Promise<boolean> {
  const row = await db.selectFrom('revoked_tokens').select('jti')
    .where((eb) => eb.or([
      eb('jti', '=', jti),
      eb.and([eb('jti', '=', everyTokenOf(userId)), eb('token_version', '>', version)])
    ]))
    .executeTakeFirst()
  return row !== undefined
}
