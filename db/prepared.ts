import pg from 'pg'
import { describes, rowShape, type RowShape } from './rows.js'

/**
 * Distinct statements a connection keeps prepared. Queries are built from a few shapes, so a
 * connection rarely needs more; past this, new texts run unprepared rather than grow the server's
 * memory without bound.
 */
export const MAX_PREPARED_PER_CONNECTION = 256

type Query = (config: unknown, values?: unknown, callback?: unknown) => unknown

// A select and nothing after it: a list page whose limit is written into its text has no parameter.
const singleSelect = /^select\s[^;]*$/i

type Done = (error: Error | undefined, result: pg.QueryResult) => void

type Parser = (text: string) => unknown
interface DataRow { fields: Array<string | null> }
interface RowDescription { fields: pg.FieldDef[] }
/** What pg's `Query` calls on itself as the server answers (pg 8's submittable protocol). */
interface QueryHandlers {
  handleRowDescription: (message: RowDescription) => void
  handleDataRow: (message: DataRow) => void
}
const pgQuery = pg.Query.prototype as unknown as QueryHandlers

/**
 * pg's `Query`, its rows made by the statement's `RowShape` (db/rows.ts) instead of pg's generic
 * copy-and-store (see PERFORMANCE-DECISIONS.md, 'Rows built by generated builders'); the shape is
 * kept per connection and statement name, checked against every RowDescription. Anything else —
 * unnamed statements, binary columns — is pg's own behaviour.
 * The fields declared below are pg 8's own (query.js); the tests in
 * test/db/prepared.test.ts (through the wire protocol, by default against PGlite) compare these
 * rows and errors with pg's and fail if they change.
 */
class ShapedQuery extends pg.Query {
  declare name?: string
  declare callback?: Done
  declare _result: { fields: pg.FieldDef[], rows: unknown[], _types: { getTypeParser: (oid: number, format: string) => Parser } }
  declare _canceledDueToError: unknown
  declare _accumulateRows: boolean
  private shape: RowShape | undefined
  private readonly shapes: Map<string, RowShape>

  constructor (text: string, values: unknown[], shapes: Map<string, RowShape>) {
    super(text, values)
    this.shapes = shapes
  }

  handleRowDescription (message: RowDescription): void {
    const name = this.name
    if (name === undefined) return pgQuery.handleRowDescription.call(this, message)
    let shape = this.shapes.get(name)
    if (shape === undefined || !describes(shape, message.fields)) {
      shape = rowShape(message.fields, (oid) => this._result._types.getTypeParser(oid, 'text'))
      if (shape === undefined) {
        this.shapes.delete(name)
        return pgQuery.handleRowDescription.call(this, message)
      }
      this.shapes.set(name, shape)
    }
    this.shape = shape
    this._result.fields = message.fields
    this._accumulateRows = true
  }

  handleDataRow (message: DataRow): void {
    const shape = this.shape
    if (shape === undefined) return pgQuery.handleDataRow.call(this, message)
    // As pg does: a value its parser refuses fails the query once the server is done with it.
    if (this._canceledDueToError !== false) return
    try {
      this._result.rows.push(shape.build(message.fields, shape.parsers))
    } catch (error) {
      this._canceledDueToError = error
    }
  }
}

/**
 * Runs `text` as a `ShapedQuery`, named when `name` is given. Handing the client a query object
 * skips what `client.query(config)` does with a config object: a copy of it through property
 * descriptors and a second promise to rewrite a failed query's stack, on every statement (see
 * PERFORMANCE-DECISIONS.md, 'Statements handed to pg as Query objects'). Kysely still adds its
 * caller's stack to a failed statement.
 */
function submit (original: Query, text: string, values: unknown[], name: string | undefined, shapes: Map<string, RowShape>, done: Done): void {
  const query = new ShapedQuery(text, values, shapes)
  if (name !== undefined) query.name = name
  query.callback = done
  original(query)
}

/**
 * Makes `client.query(text, values[, callback])` — how Kysely runs every statement, and `readRows`
 * every compiled read — a named prepared statement: PostgreSQL parses and plans the text once per
 * connection instead of at every call, and the Parse message is no longer sent (see
 * PERFORMANCE-DECISIONS.md, 'Prepared statements'). Other statements without parameters (BEGIN,
 * migrations, scripts of several commands) run as they are.
 */
export function preparingStatements (client: pg.PoolClient): void {
  const names = new Map<string, string>()
  const shapes = new Map<string, RowShape>()
  const query = client.query.bind(client) as Query
  const prepared: Query = (config, values, callback) => {
    if (typeof config !== 'string' || !Array.isArray(values) || (callback !== undefined && typeof callback !== 'function') ||
      (values.length === 0 && !singleSelect.test(config))) {
      return query(config, values, callback)
    }
    let name = names.get(config)
    if (name === undefined && names.size < MAX_PREPARED_PER_CONNECTION) {
      name = `tandem_${names.size + 1}`
      names.set(config, name)
    }
    if (callback !== undefined) {
      submit(query, config, values, name, shapes, callback as Done)
      return undefined
    }
    return new Promise((resolve, reject) => {
      submit(query, config, values, name, shapes, (error, result) => { if (error == null) resolve(result); else reject(error) })
    })
  }
  client.query = prepared as typeof client.query
}
