import { createHash } from 'node:crypto'
import type { Db } from './connect.js'

/** The APQ hash of a document: lowercase hex SHA-256 of its UTF-8 text. */
export function queryHash (query: string): string {
  return createHash('sha256').update(query, 'utf8').digest('hex')
}

/** The document stored under `sha256`, or undefined. */
export async function findPersistedQuery (db: Db, sha256: string): Promise<string | undefined> {
  const row = await db.selectFrom('persisted_queries').select('query').where('sha256', '=', sha256).executeTakeFirst()
  return row?.query
}

/**
 * Stores a document under its hash (computed here, so a caller cannot file a document under
 * another's hash). Storing the same document twice is a no-op. Returns the hash.
 */
export async function savePersistedQuery (db: Db, query: string): Promise<string> {
  const sha256 = queryHash(query)
  await db.insertInto('persisted_queries').values({ sha256, query })
    .onConflict((oc) => oc.column('sha256').doNothing())
    .execute()
  return sha256
}
