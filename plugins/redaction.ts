// What never leaves the process, in a log line (plugins/server-options.ts) or a span
// (plugins/tracing-redaction.ts): the values of secret-looking query parameters, and the text of
// errors, which may quote what a client sent.

// Query parameters whose values are redacted: credentials under their usual names, and GraphQL
// documents and variables sent by GET (`login(password: "…")` would otherwise travel with the URL).
const SECRET_PARAMETER = /password|passwd|secret|token|api[-_]?key|authori[sz]ation|signature|credential|^(query|variables|pwd|key|sig|code)$/i

/** A query string (without its `?`) with the values of secret-looking parameters replaced by `[redacted]`. */
export function redactQuery (query: string): string {
  return query.split('&').map((pair) => {
    const equals = pair.indexOf('=')
    if (equals === -1) return pair
    let name = pair.slice(0, equals)
    try { name = decodeURIComponent(name.replaceAll('+', ' ')) } catch {}
    return SECRET_PARAMETER.test(name) ? `${pair.slice(0, equals)}=[redacted]` : pair
  }).join('&')
}

/** The URL with the values of secret-looking query parameters replaced by `[redacted]`. */
export function redactUrl (url: string): string {
  const question = url.indexOf('?')
  return question === -1 ? url : `${url.slice(0, question)}?${redactQuery(url.slice(question + 1))}`
}

/** A request URL's path, and its query string redacted (`undefined` when it has none). */
export function splitUrl (url: string): { path: string, query: string | undefined } {
  const question = url.indexOf('?')
  return question === -1 ? { path: url, query: undefined } : { path: url.slice(0, question), query: redactQuery(url.slice(question + 1)) }
}

// A code or a class name, not a sentence.
const IDENTIFIER = /^[\w$.-]{1,100}$/

/**
 * What an error may say of itself where it is recorded beyond its answer: its code (`TANDEM_ERR_…`,
 * a GraphQL `extensions.code`, `FST_ERR_…`, `MER_ERR_…`, a PostgreSQL SQLSTATE), else its class.
 * Never its message: graphql-js quotes variables and literals, JSON.parse the body, PostgreSQL the
 * value it could not read.
 */
export function errorCode (error: unknown): string {
  if (typeof error !== 'object' || error === null) return 'Error'
  const { code, extensions } = error as { code?: unknown, extensions?: { code?: unknown } }
  for (const candidate of [extensions?.code, code]) {
    if ((typeof candidate === 'string' || typeof candidate === 'number') && IDENTIFIER.test(String(candidate))) return String(candidate)
  }
  return errorClass(error)
}

/** An error's class (`GraphQLError`, `DatabaseError`, `SyntaxError`): its `name`, else its constructor's. */
export function errorClass (error: unknown): string {
  if (typeof error !== 'object' || error === null) return 'Error'
  const { name } = error as { name?: unknown }
  if (typeof name === 'string' && IDENTIFIER.test(name)) return name
  const constructor = (error as { constructor?: { name?: unknown } }).constructor?.name
  return typeof constructor === 'string' && constructor !== 'Object' && constructor !== '' ? constructor : 'Error'
}
