import { TandemError, conflict, unavailable, unprocessable, badRequest } from '../schema/errors.js'

interface DatabaseErrorLike {
  code?: unknown
  constraint?: unknown
  table?: unknown
  column?: unknown
  detail?: unknown
}

/**
 * What a violation on a declared resource's table needs to name the field its client set: the table,
 * and the columns the API sets itself (the owner, the keys of the parents its rows are listed under),
 * which a client never chose.
 */
export interface KeyContext {
  readonly table: string
  readonly setByApi: readonly string[]
}

// Constraint names follow PostgreSQL's own `<table>_<columns>_<kind>` pattern, and a few are
// named by hand where the column is an expression.
const fieldOfConstraint: Record<string, string> = {
  users_email_key: 'email'
}

/** The expressions of a key's column list, split at its top-level commas (`a, lower(b::text)`). */
function splitColumns (list: string): string[] {
  const parts: string[] = []
  let depth = 0
  let quoted = false
  let start = 0
  for (let i = 0; i < list.length; i++) {
    const c = list[i]
    if (c === '"') quoted = !quoted
    else if (!quoted && c === '(') depth++
    else if (!quoted && c === ')') depth--
    else if (!quoted && depth === 0 && c === ',') {
      parts.push(list.slice(start, i).trim())
      start = i + 1
    }
  }
  parts.push(list.slice(start).trim())
  return parts
}

/** The column one of a key's expressions reads: itself, unquoted, or the last column an expression names (`lower(name::text)`: name). */
function columnOf (expression: string): string | undefined {
  const quoted = /^"((?:[^"]|"")+)"$/.exec(expression)
  if (quoted !== null) return (quoted[1] as string).replaceAll('""', '"')
  // Names that are neither called (`lower(`) nor a cast's type (`::text`).
  const names = [...expression.matchAll(/(?<!::)\b([a-z_][a-z0-9_$]*)\b(?!\s*\()/gi)].map((match) => match[1] as string)
  return names.at(-1)
}

/**
 * The columns of the key a violation names, read from its detail (`Key (owner_id, name)=(…) already
 * exists.`, the same shape in every language the server speaks): their names only, the values are
 * never read. Undefined when there is no such detail.
 */
function keyColumns (detail: unknown): string[] | undefined {
  if (typeof detail !== 'string') return undefined
  const start = detail.indexOf('(')
  const end = detail.indexOf(')=(')
  if (start < 0 || end <= start) return undefined
  const columns = splitColumns(detail.slice(start + 1, end)).map(columnOf).filter((column) => column !== undefined)
  return columns.length === 0 ? undefined : columns
}

/**
 * The field a violation names. A constraint over several columns names the one its client set: the
 * constraint's own name when the host named it after one of its columns (`<table>_<column>_key`),
 * else its last column that the API does not set itself (`context`: the owner, a parent's key).
 */
function fieldOf (error: DatabaseErrorLike, context?: KeyContext): string | undefined {
  if (typeof error.column === 'string') return error.column
  if (typeof error.constraint !== 'string') return undefined
  const known = fieldOfConstraint[error.constraint]
  if (known !== undefined) return known
  const table = typeof error.table === 'string' ? error.table + '_' : ''
  const named = error.constraint.replace(table, '').replace(/_(key|fkey|check|pkey|not_null)$/, '')
  const columns = keyColumns(error.detail)
  if (columns === undefined || columns.includes(named)) return named
  const setByApi = context !== undefined && context.table === error.table ? context.setByApi : []
  return columns.findLast((column) => !setByApi.includes(column)) ?? columns.at(-1)
}

// Connection failures, a server shutting down or killing the backend, too many clients, and a
// statement cancelled by `statement_timeout` (57014): the client can only retry later.
const connectionCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EPIPE', '57P01', '57P02', '57P03', '53300', '57014'])

/**
 * A foreign key that names no row (or, for a write that checks it, no row the caller may read: the
 * same answer, so that the two cannot be told apart): 422 naming the field.
 */
export const refersToNothingError = (field: string | undefined): TandemError =>
  unprocessable(`${field ?? 'reference'} refers to something that does not exist`, field)

/**
 * Translates a driver error (pg or PGlite) into the API's error model, or returns undefined when
 * it is not a database condition a client can act on. Raw database text never leaves here.
 */
export function fromDatabaseError (error: unknown, context?: KeyContext): TandemError | undefined {
  if (error === null || typeof error !== 'object') return undefined
  const e = error as DatabaseErrorLike & { message?: unknown }
  const code = typeof e.code === 'string' ? e.code : undefined
  if (code === undefined) {
    if (typeof e.message === 'string' && /timeout exceeded when trying to connect|Connection terminated|not queryable/i.test(e.message)) return unavailable()
    return undefined
  }
  if (connectionCodes.has(code) || code.startsWith('08')) return unavailable()
  const field = fieldOf(e, context)
  switch (code) {
    case '23505': return conflict(`${field ?? 'value'} already exists`, field)
    case '23503': return refersToNothingError(field)
    case '23514': return unprocessable(`${field ?? 'value'} is out of range`, field)
    case '23502': return badRequest(`${field ?? 'value'} is required`, field)
    case '22001': return badRequest(`${field ?? 'value'} is too long`, field)
    case '22003': return badRequest(`${field ?? 'value'} is out of range`, field)
    case '22P02': case '22007': case '22008': return badRequest('invalid value', field)
    // PostgreSQL text cannot hold U+0000: it refuses the bytes (22021) or the JSON escape (22P05).
    case '22021': case '22P05': return badRequest('text must not contain the NUL character (\\u0000)', field)
    case '40001': case '40P01': return conflict('the request conflicted with another one; retry it')
    default: return undefined
  }
}

/**
 * A statement's error on a declared resource's table (`context`), a unique key it would break answered
 * as the 409 naming the field its client set (`fieldOf`); any other error as it was.
 */
export function conflictOn (error: unknown, context: KeyContext): unknown {
  if (error === null || typeof error !== 'object' || (error as DatabaseErrorLike).code !== '23505') return error
  return fromDatabaseError(error, context) ?? error
}

/** Whether `error` is a foreign key of `column` naming a row that is not there (or no longer). */
export function refersToNothing (error: unknown, column: string): boolean {
  if (error === null || typeof error !== 'object' || (error as DatabaseErrorLike).code !== '23503') return false
  return fieldOf(error as DatabaseErrorLike) === column
}
