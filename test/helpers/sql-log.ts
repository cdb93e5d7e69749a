import type { CompiledQuery } from 'kysely'
import type { Db } from '../../db/connect.js'

/**
 * A view of `db` that records the SQL text of every statement it runs outside transactions: at
 * the executor, so that statements compiled once and run many times count at every run.
 */
export function recordSql (db: Db): { db: Db, statements: string[] } {
  const statements: string[] = []
  // A view with an executor of its own, so that the original `db` is not recorded.
  const view = db.withPlugin({ transformQuery: (args) => args.node, transformResult: async (args) => args.result })
  const executor = view.getExecutor()
  const run = executor.executeQuery.bind(executor)
  executor.executeQuery = async <R>(compiled: CompiledQuery) => {
    statements.push(compiled.sql)
    return run<R>(compiled)
  }
  return { db: view, statements }
}
