import { createQueryId, PostgresQueryCompiler, type KyselyPlugin } from 'kysely'
import type { Db } from '../db/connect.js'

/** A view of `db` that records the SQL text of every statement it runs. */
export function recordSql (db: Db): { db: Db, statements: string[] } {
  const statements: string[] = []
  const compiler = new PostgresQueryCompiler()
  const plugin: KyselyPlugin = {
    transformQuery (args) {
      statements.push(compiler.compileQuery(args.node, createQueryId()).sql)
      return args.node
    },
    async transformResult (args) { return args.result }
  }
  return { db: db.withPlugin(plugin), statements }
}
