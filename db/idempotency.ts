import { sql } from 'kysely'
import type { Db } from './connect.js'

/** How long a key's first response is kept and replayed. */
export const KEY_LIFETIME_HOURS = 24
/** A first request that has not finished after this long is taken as lost (its process died). */
const ABANDONED_AFTER_SECONDS = 60

/** The scope of a signed-in caller's keys; its records go with the user. */
export const userScope = (userId: number): string => `user:${userId}`
/** The scope of an anonymous caller's keys: their address, so that one client's key never meets another's. */
export const addressScope = (address: string): string => `ip:${address}`

export interface StoredResponse {
  statusCode: number
  headers: Record<string, string>
  body: string
}

export type Claim =
  | { outcome: 'claimed' }
  | { outcome: 'replay', response: StoredResponse }
  | { outcome: 'mismatch' }
  | { outcome: 'in-progress' }

/**
 * Claims `key` for a request, atomically: the first caller gets `claimed` and runs the request;
 * later ones with the same request get its stored response, with another request `mismatch`.
 */
export async function claimKey (db: Db, scope: string, key: string, requestHash: string): Promise<Claim> {
  // Expired keys and abandoned claims free themselves, in the same statement as the claim.
  await db.deleteFrom('idempotency_keys')
    .where('scope', '=', scope).where('key', '=', key)
    .where((eb) => eb.or([
      eb('created_at', '<', sql<Date>`now() - make_interval(hours => ${KEY_LIFETIME_HOURS})`),
      eb.and([eb('status_code', 'is', null), eb('created_at', '<', sql<Date>`now() - make_interval(secs => ${ABANDONED_AFTER_SECONDS})`)])
    ]))
    .execute()
  const inserted = await db.insertInto('idempotency_keys')
    .values({ scope, key, request_hash: requestHash })
    .onConflict((oc) => oc.doNothing())
    .returning('key')
    .executeTakeFirst()
  if (inserted !== undefined) return { outcome: 'claimed' }
  const existing = await db.selectFrom('idempotency_keys')
    .select(['request_hash', 'status_code', 'headers', 'body'])
    .where('scope', '=', scope).where('key', '=', key)
    .executeTakeFirst()
  if (existing === undefined) return claimKey(db, scope, key, requestHash)
  if (existing.request_hash !== requestHash) return { outcome: 'mismatch' }
  if (existing.status_code === null || existing.body === null) return { outcome: 'in-progress' }
  return { outcome: 'replay', response: { statusCode: existing.status_code, headers: existing.headers ?? {}, body: existing.body } }
}

export async function completeKey (db: Db, scope: string, key: string, response: StoredResponse): Promise<void> {
  await db.updateTable('idempotency_keys')
    .set({ status_code: response.statusCode, headers: JSON.stringify(response.headers), body: response.body })
    .where('scope', '=', scope).where('key', '=', key)
    .execute()
}

/** Gives a key back when its request failed, so that a retry runs again. */
export async function releaseKey (db: Db, scope: string, key: string): Promise<void> {
  await db.deleteFrom('idempotency_keys').where('scope', '=', scope).where('key', '=', key).where('status_code', 'is', null).execute()
}
