import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { GraphQLError, type ExecutionResult, type GraphQLFormattedError } from 'graphql'
import { fromDatabaseError } from '../db/errors.js'
import { TandemError, graphqlCode } from '../schema/errors.js'
import { toErrorResponse } from '../plugins/errors.js'

/** `extensions.code` values this API answers with (besides those of `graphqlCode`). */
export const codes = {
  parseFailed: 'GRAPHQL_PARSE_FAILED',
  validationFailed: 'GRAPHQL_VALIDATION_FAILED',
  badUserInput: 'BAD_USER_INPUT',
  forbidden: 'FORBIDDEN',
  depthLimit: 'DEPTH_LIMIT_EXCEEDED',
  complexityLimit: 'COMPLEXITY_LIMIT_EXCEEDED',
  persistedQueryNotFound: 'PERSISTED_QUERY_NOT_FOUND',
  persistedQueryNotSupported: 'PERSISTED_QUERY_NOT_SUPPORTED',
  badRequest: 'BAD_REQUEST',
  rateLimited: 'RATE_LIMITED',
  tooManySubscriptions: 'TOO_MANY_SUBSCRIPTIONS',
  introspectionDisabled: 'INTROSPECTION_DISABLED',
  internal: 'INTERNAL_SERVER_ERROR'
} as const

/** An error of ours that already knows its `extensions.code` (limits, input checks). */
export function clientError (message: string, code: string, extensions: Record<string, unknown> = {}): GraphQLError {
  return new GraphQLError(message, { extensions: { ...extensions, code } })
}

/** Several errors found before execution (validation rules run in a hook): reported together, HTTP 200. */
export class GraphqlRequestError extends Error {
  override name = 'GraphqlRequestError'
  constructor (readonly errors: readonly GraphQLError[]) {
    super(errors[0]?.message ?? 'invalid request')
  }
}

// graphql-js's own messages for variables whose values do not fit their types (coerceVariableValues).
const VARIABLE_VALUE = /^Variable "\$[^"]+" (got invalid value|of required type|of non-null type)/
// Those of them that quote the value (graphql-js and graphql-jit both write it whole): only the name is kept.
const QUOTES_VALUE = /^Variable "\$([_A-Za-z][_0-9A-Za-z]*)" got invalid value/
// graphql-js's own messages when `operationName` does not pick one operation of the document.
const OPERATION_CHOICE = /^(Unknown operation named "|Must provide operation name if query contains multiple operations|Must provide an operation)/

type Phase = 'request' | 'execution'

// graphql-js appends its suggestions to a message: ` Did you mean "name"?`, ` Did you mean "a", "b", or "c"?`,
// ` Did you mean the enum value "A"?`, ` Did you mean to use an inline fragment on "T"?` (names hold no `?`).
const SUGGESTION = /\s*Did you mean [^?]*\?/g

/** `message` without graphql-js's "Did you mean …?" suggestions, which name parts of the schema. */
export const withoutSuggestions = (message: string): string => message.replace(SUGGESTION, '')

/** How errors are written for clients. */
export interface FormatOptions {
  /**
   * Keep graphql-js's "Did you mean …?" suggestions in messages. They name fields, arguments and
   * types of the schema: off where introspection is off. @example false
   */
  suggestions: boolean
}

const WITH_SUGGESTIONS: FormatOptions = { suggestions: true }

function fromTandemError (error: TandemError): GraphQLFormattedError['extensions'] {
  return error.field === undefined ? { code: graphqlCode(error.code) } : { code: graphqlCode(error.code), field: error.field }
}

/**
 * The one mapping from anything that went wrong to a client's error: message, locations, path and
 * `extensions.code` (with `field` when an input caused it). Unknown faults become
 * INTERNAL_SERVER_ERROR with a fixed message and are logged; no SQL, stack or driver text leaves.
 */
export function formatError (error: GraphQLError, phase: Phase, log: FastifyBaseLogger, options: FormatOptions = WITH_SUGGESTIONS): GraphQLFormattedError {
  const formatted = formatOne(error, phase, log)
  return options.suggestions ? formatted : { ...formatted, message: withoutSuggestions(formatted.message) }
}

function formatOne (error: GraphQLError, phase: Phase, log: FastifyBaseLogger): GraphQLFormattedError {
  const base: { message: string, locations?: GraphQLFormattedError['locations'], path?: GraphQLFormattedError['path'] } = { message: error.message }
  if (error.locations !== undefined) base.locations = error.locations
  if (error.path !== undefined) base.path = error.path
  const ours = error.extensions?.code
  if (typeof ours === 'string') return { ...base, extensions: error.extensions }
  // Variables whose values do not fit their types (the scalar's own error is the original). They are
  // checked before graphql-js sees them (variables.ts); should one still get here, its value stays out.
  if (VARIABLE_VALUE.test(error.message)) {
    const name = QUOTES_VALUE.exec(error.message)?.[1]
    return { ...base, ...(name === undefined ? {} : { message: `Variable "$${name}" got an invalid value.` }), extensions: { code: codes.badUserInput } }
  }
  if (error.originalError === undefined && OPERATION_CHOICE.test(error.message)) return { ...base, extensions: { code: codes.badUserInput } }

  const original = error.originalError
  if (original !== undefined && original !== null) {
    const known = original instanceof TandemError ? original : fromDatabaseError(original)
    if (known !== undefined) {
      if (known.statusCode >= 500) log.error({ err: original }, 'graphql: ' + known.message)
      return { ...base, message: known.message, extensions: fromTandemError(known) }
    }
    const nested = (original as { extensions?: { code?: unknown } }).extensions
    if (original instanceof GraphQLError && typeof nested?.code === 'string') {
      return { ...base, message: original.message, extensions: nested as Record<string, unknown> }
    }
  }
  if (phase === 'request') {
    // Before execution only the document can be at fault: a literal a scalar refused, say.
    const code = original === undefined && error.message.startsWith('Syntax Error') ? codes.parseFailed : codes.validationFailed
    return { ...base, extensions: { code } }
  }
  // During execution, anything else is a fault of ours: a resolver that failed, or a
  // non-null field left without a value. Logged; the client learns nothing of it.
  log.error({ err: original ?? error, path: error.path }, 'graphql: resolver failed')
  return { ...base, message: original === undefined ? error.message : 'internal server error', extensions: { code: codes.internal } }
}

/** Mercurius's `errorFormatter`: errors of an executed operation; always HTTP 200. */
export function errorFormatter (execution: ExecutionResult & { errors: readonly GraphQLError[] }, context: { reply?: FastifyReply, app?: { log: FastifyBaseLogger } }, options: FormatOptions = WITH_SUGGESTIONS): { statusCode: number, response: ExecutionResult } {
  const log = context.reply?.log ?? context.app?.log
  const errors = execution.errors.map((error) => formatError(error, 'execution', log as FastifyBaseLogger, options))
  // The formatted errors are plain JSON objects, as `GraphQLError.toJSON()` would give.
  return { statusCode: 200, response: { data: execution.data ?? null, errors: errors as unknown as GraphQLError[] } }
}

interface RequestFailure { statusCode: number, errors: GraphQLFormattedError[] }

const httpFailure = (statusCode: number, message: string, code: string = codes.badRequest): RequestFailure =>
  ({ statusCode, errors: [{ message, extensions: { code } }] })

/** What to answer for an error raised before or instead of execution. */
export function requestFailure (error: unknown, log: FastifyBaseLogger, options: FormatOptions = WITH_SUGGESTIONS): RequestFailure {
  if (error instanceof GraphqlRequestError) return { statusCode: 200, errors: error.errors.map((e) => formatError(e, 'request', log, options)) }
  if (error instanceof GraphQLError) return { statusCode: 200, errors: [formatError(error, 'request', log, options)] }
  const e = error as FastifyError & { errors?: unknown }
  switch (e.code) {
    case 'MER_ERR_GQL_VALIDATION': {
      const items = Array.isArray(e.errors) ? e.errors as unknown[] : []
      if (items.length > 0 && items.every((item) => item instanceof GraphQLError)) {
        return { statusCode: 200, errors: (items as GraphQLError[]).map((item) => formatError(item, 'request', log, options)) }
      }
      // The body is not a GraphQL request (fails the route's schema), or `variables` is not JSON.
      const detail = (items[0] as { message?: unknown } | undefined)?.message
      return httpFailure(400, `not a GraphQL request: ${typeof detail === 'string' ? detail : 'variables and extensions must be JSON'}`)
    }
    case 'MER_ERR_GQL_PERSISTED_QUERY_NOT_FOUND':
      // Mercurius raises the same error for a body without any query at all.
      return e.message === 'Unknown query'
        ? httpFailure(400, 'not a GraphQL request: send {query, variables, operationName}')
        : { statusCode: 200, errors: [{ message: e.message, extensions: { code: codes.persistedQueryNotFound } }] }
    case 'MER_ERR_GQL_PERSISTED_QUERY_NOT_SUPPORTED':
      return { statusCode: 200, errors: [{ message: e.message, extensions: { code: codes.persistedQueryNotSupported } }] }
    case 'MER_ERR_GQL_PERSISTED_QUERY_MISMATCH':
      return { statusCode: 200, errors: [{ message: e.message, extensions: { code: codes.badUserInput } }] }
    case 'MER_ERR_METHOD_NOT_ALLOWED':
      return httpFailure(405, 'only queries may be sent with GET; send mutations with POST')
  }
  const known = error instanceof TandemError ? error : fromDatabaseError(error)
  if (known !== undefined) {
    if (known.statusCode >= 500) log.error({ err: error }, 'graphql: request failed')
    // Rate limiting keeps its HTTP status, as in the resource style; everything else is 200.
    return { statusCode: known.statusCode === 429 ? 429 : 200, errors: [{ message: known.message, extensions: fromTandemError(known) }] }
  }
  // Fastify's own refusals (content type, body size, malformed JSON) keep their status.
  const { statusCode, body } = toErrorResponse(error as FastifyError)
  if (statusCode >= 500) {
    log.error({ err: error }, 'graphql: request failed')
    return httpFailure(500, 'internal server error', codes.internal)
  }
  return httpFailure(statusCode, body.error)
}

/** Mercurius's `errorHandler`: requests that fail before execution. */
export async function errorHandler (error: FastifyError, request: FastifyRequest, reply: FastifyReply, options: FormatOptions = WITH_SUGGESTIONS): Promise<void> {
  const { statusCode, errors } = requestFailure(error, request.log, options)
  if (statusCode === 405) reply.header('allow', 'GET, POST')
  if (statusCode < 500) request.log.info({ err: { message: error.message, code: error.code }, statusCode }, 'graphql request rejected')
  await reply.code(statusCode).type('application/json; charset=utf-8').send({ errors })
}
