import { createHash } from 'node:crypto'
import { sql } from 'kysely'
import type { Db } from './connect.js'

/** Documents learnt from clients kept at most, by default; registered ones do not count. */
export const MAX_LEARNT_QUERIES = 10_000
/** Bytes the documents learnt from clients may take in all, by default. */
export const MAX_LEARNT_BYTES = 16 * 1024 * 1024

export interface LearntBudget {
  /** Documents kept at most. @example 10000 */
  count: number
  /** Bytes (UTF-8) of their text in all. @example 16777216 */
  bytes: number
}

/** The APQ hash of a document: lowercase hex SHA-256 of its UTF-8 text. */
export function queryHash (query: string): string {
  return createHash('sha256').update(query, 'utf8').digest('hex')
}

/**
 * The document stored under `sha256`, or undefined. Reading it marks it used, so that the learnt
 * documents dropped first are those no instance has needed for the longest.
 */
export async function findPersistedQuery (db: Db, sha256: string): Promise<string | undefined> {
  const row = await db.updateTable('persisted_queries').set({ used_at: sql<Date>`now()` })
    .where('sha256', '=', sha256)
    .returning('query')
    .executeTakeFirst()
  return row?.query
}

/**
 * Registers a document under its hash (computed here, so a caller cannot file a document under
 * another's hash), for good: it is never dropped, even if a client taught it first. Returns the hash.
 */
export async function savePersistedQuery (db: Db, query: string): Promise<string> {
  const sha256 = queryHash(query)
  await db.insertInto('persisted_queries').values({ sha256, query })
    .onConflict((oc) => oc.column('sha256').doUpdateSet({ learnt: false }))
    .execute()
  return sha256
}

/**
 * Stores a document a client taught (automatic persisted queries). Any client can, so learnt
 * documents are kept within `budget`: each new one drops those used least recently past it.
 */
export async function learnPersistedQuery (db: Db, query: string, budget: LearntBudget = { count: MAX_LEARNT_QUERIES, bytes: MAX_LEARNT_BYTES }): Promise<string> {
  const sha256 = queryHash(query)
  const inserted = await db.insertInto('persisted_queries').values({ sha256, query, learnt: true })
    .onConflict((oc) => oc.column('sha256').doNothing())
    .returning('sha256')
    .executeTakeFirst()
  if (inserted !== undefined) {
    // A bounded walk of the partial index on used_at: learning is rare, and this keeps the table small.
    await db.deleteFrom('persisted_queries')
      .where('learnt', '=', true)
      .where('sha256', 'in', (eb) => eb.selectFrom('persisted_queries').select('sha256')
        .where('learnt', '=', true)
        .orderBy('used_at', 'desc').orderBy('sha256')
        .offset(budget.count))
      .execute()
    await db.deleteFrom('persisted_queries')
      .where('learnt', '=', true)
      .where('sha256', 'in', (eb) => eb.selectFrom(
        eb.selectFrom('persisted_queries').select(['sha256', sql<number>`sum(octet_length(query)) over (order by used_at desc, sha256)`.as('total')])
          .where('learnt', '=', true)
          .as('learnt')
      ).select('sha256').where('total', '>', budget.bytes))
      .execute()
  }
  return sha256
}
