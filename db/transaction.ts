import { sql } from 'kysely'
import type { Db } from './connect.js'

// The transactions `inBatch` runs a batch in, while it does.
const batches = new WeakSet<Db>()

/**
 * Runs `work`, a batch of writes (many rows in one request), in one transaction as `inTransaction`
 * does: all of it commits, or none. The writes inside run in it directly, without a savepoint each
 * (two statements per row saved): the first that fails ends the batch, which is undone whole.
 */
export async function inBatch<T> (db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  return inTransaction(db, async (trx) => {
    if (batches.has(trx)) return work(trx)
    batches.add(trx)
    try {
      return await work(trx)
    } finally {
      batches.delete(trx)
    }
  })
}

/**
 * Runs `work` in one transaction: its own, or, when `db` is already a transaction (an idempotent
 * request's, which also records the response), inside it under a savepoint, so that a failure
 * undoes `work` alone and the outer transaction stays usable. Savepoints nest as a stack: do not
 * run two of these at once on one transaction (`Promise.all`), one after the other only.
 */
export async function inTransaction<T> (db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  // Inside a batch, a failure undoes the whole batch: no savepoint is needed per write.
  if (batches.has(db)) return work(db)
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

/**
 * Runs `work` under a savepoint of the transaction `trx`, even inside a batch: a failure undoes `work`
 * alone (a batch's rows inserted in one statement, which a constraint refuses) and `trx` stays usable.
 */
export async function underSavepoint<T> (trx: Db, work: () => Promise<T>): Promise<T> {
  await sql`savepoint tandem_rows`.execute(trx)
  try {
    const result = await work()
    await sql`release savepoint tandem_rows`.execute(trx)
    return result
  } catch (error) {
    await sql`rollback to savepoint tandem_rows`.execute(trx)
    throw error
  }
}
