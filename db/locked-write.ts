import type { Db } from './connect.js'
import { inTransaction } from './transaction.js'

/**
 * Throws to refuse a write (a stale `If-Match`, say); runs on the current row, locked, and may ask
 * the write's transaction `trx` (who owns the row through a relation).
 */
export type Precondition<Row> = (current: Row, trx: Db) => void | Promise<void>

/**
 * Reads the row with `lock` (a `FOR UPDATE` select), runs `check` on it, then `write` — in one
 * transaction, so nothing can change the row between the check and the write. Undefined when
 * there is no such row.
 */
export async function lockedWrite<Row, Result> (
  db: Db,
  lock: (trx: Db) => Promise<Row | undefined>,
  check: Precondition<Row> | undefined,
  write: (trx: Db, current: Row) => Promise<Result>
): Promise<Result | undefined> {
  return inTransaction(db, async (trx) => {
    const current = await lock(trx)
    if (current === undefined) return undefined
    await check?.(current, trx)
    return write(trx, current)
  })
}
