import pg from 'pg'
import { describes, rowShape, type RowShape } from './rows.js'

export type Done = (error: Error | undefined, result: pg.QueryResult) => void
/** The row shapes of one connection's prepared statements, by statement name. */
export type RowShapes = Map<string, RowShape>

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
 * pg's `Query`, its rows made by the statement's `RowShape` (./rows.ts) instead of pg's generic
 * copy-and-store (see PERFORMANCE-DECISIONS.md, 'Rows built by generated builders'); the shape is
 * kept per connection and statement name, checked against every RowDescription. Anything else —
 * unnamed statements, binary columns — is pg's own behaviour.
 * The fields declared below are pg 8's own (query.js) and undocumented: `missingFromQuery` checks
 * them at start, and test/db/prepared.test.ts compares these rows and errors with pg's.
 */
class ShapedQuery extends pg.Query {
  declare name?: string
  declare callback?: Done
  declare _result: { fields: pg.FieldDef[], rows: unknown[], _types: { getTypeParser: (oid: number, format: string) => Parser } }
  declare _canceledDueToError: unknown
  declare _accumulateRows: boolean
  private shape: RowShape | undefined
  private readonly shapes: RowShapes

  constructor (text: string, values: unknown[], shapes: RowShapes) {
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
 * Runs `text` as the prepared statement `name`, handed to the client as a `ShapedQuery`. A query
 * object also skips what `client.query(config)` does with a config object: a copy of it through
 * property descriptors, on every statement (see PERFORMANCE-DECISIONS.md, 'Statements handed to pg
 * as Query objects').
 */
export function submitShaped (client: pg.ClientBase, text: string, values: unknown[], name: string, shapes: RowShapes, done: Done): void {
  const query = new ShapedQuery(text, values, shapes)
  query.name = name
  query.callback = done
  client.query(query)
}

const isFunction = (value: unknown): boolean => typeof value === 'function'

/**
 * What `ShapedQuery` relies on that a `Query` no longer has, or undefined when it has it all: the
 * methods it overrides, and the fields pg 8 sets in its constructor and in `handleRowDescription`.
 * Checked on a query that is never sent.
 */
export function missingFromQuery (Query: typeof pg.Query): string | undefined {
  const prototype = Query.prototype as unknown as Record<string, unknown>
  for (const method of ['submit', 'handleRowDescription', 'handleDataRow']) {
    if (!isFunction(prototype[method])) return `Query.prototype.${method}`
  }
  const query = new Query('select 1', []) as unknown as Record<string, unknown>
  for (const field of ['name', 'callback']) {
    if (!Object.hasOwn(query, field)) return `Query's ${field}`
  }
  if (query._canceledDueToError !== false) return 'Query\'s _canceledDueToError'
  const result = query._result as Record<string, unknown> | undefined
  if (typeof result !== 'object' || result === null || !Array.isArray(result.rows) || !Array.isArray(result.fields) || !Object.hasOwn(result, '_types')) {
    return 'Query\'s _result (rows, fields, _types)'
  }
  try {
    (query as unknown as QueryHandlers).handleRowDescription({ fields: [] })
  } catch {
    return 'Query.prototype.handleRowDescription on no columns'
  }
  if (typeof query._accumulateRows !== 'boolean') return 'Query\'s _accumulateRows'
  return undefined
}
