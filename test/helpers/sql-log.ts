import type { CompiledQuery } from 'kysely'
import type { Db } from '../../db/connect.js'

/**
 * A view of `db` that records the SQL text of every statement it runs outside transactions: at
 * the executor, so that statements compiled once and run many times count at every run. A statement
 * matching `failing.when` is recorded, then fails as a database fault would.
 */
export function recordSql (db: Db): { db: Db, statements: string[], failing: { when?: RegExp } } {
  const statements: string[] = []
  const failing: { when?: RegExp } = {}
  // A view with an executor of its own, so that the original `db` is not recorded.
  const view = db.withPlugin({ transformQuery: (args) => args.node, transformResult: async (args) => args.result })
  const executor = view.getExecutor()
  const run = executor.executeQuery.bind(executor)
  executor.executeQuery = async <R>(compiled: CompiledQuery) => {
    statements.push(compiled.sql)
    if (failing.when?.test(compiled.sql) === true) throw new Error('connection terminated unexpectedly')
    return run<R>(compiled)
  }
  return { db: view, statements, failing }
}
