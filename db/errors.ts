import { TandemError, conflict, unavailable, unprocessable, badRequest } from '../schema/errors.js'

interface DatabaseErrorLike {
  code?: unknown
  constraint?: unknown
  table?: unknown
  column?: unknown
}

// Constraint names follow PostgreSQL's own `<table>_<columns>_<kind>` pattern, and a few are
// named by hand where the column is an expression.
const fieldOfConstraint: Record<string, string> = {
  users_email_key: 'email'
}

function fieldOf (error: DatabaseErrorLike): string | undefined {
  if (typeof error.column === 'string') return error.column
  if (typeof error.constraint !== 'string') return undefined
  const known = fieldOfConstraint[error.constraint]
  if (known !== undefined) return known
  const table = typeof error.table === 'string' ? error.table + '_' : ''
  return error.constraint.replace(table, '').replace(/_(key|fkey|check|pkey|not_null)$/, '')
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
export function fromDatabaseError (error: unknown): TandemError | undefined {
  if (error === null || typeof error !== 'object') return undefined
  const e = error as DatabaseErrorLike & { message?: unknown }
  const code = typeof e.code === 'string' ? e.code : undefined
  if (code === undefined) {
    if (typeof e.message === 'string' && /timeout exceeded when trying to connect|Connection terminated|not queryable/i.test(e.message)) return unavailable()
    return undefined
  }
  if (connectionCodes.has(code) || code.startsWith('08')) return unavailable()
  const field = fieldOf(e)
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

/** Whether `error` is a foreign key of `column` naming a row that is not there (or no longer). */
export function refersToNothing (error: unknown, column: string): boolean {
  if (error === null || typeof error !== 'object' || (error as DatabaseErrorLike).code !== '23503') return false
  return fieldOf(error as DatabaseErrorLike) === column
}
