import { sql } from 'kysely'
import type { Db } from './connect.js'

/**
 * Runs `work` in one transaction: its own, or, when `db` is already a transaction (an idempotent
 * request's, which also records the response), inside it under a savepoint, so that a failure
 * undoes `work` alone and the outer transaction stays usable. Savepoints nest as a stack: do not
 * run two of these at once on one transaction (`Promise.all`), one after the other only.
 */
export async function inTransaction<T> (db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  if (!db.isTransaction) return db.transaction().execute(work)
  await sql`savepoint tandem_work`.execute(db)
  try {
    const result = await work(db)
    await sql`release savepoint tandem_work`.execute(db)
    return result
  } catch (error) {
    await sql`rollback to savepoint tandem_work`.execute(db)
    throw error
  }
}
