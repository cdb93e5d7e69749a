import { Type, type Static } from '@sinclair/typebox'

/** The body of every non-2xx REST response. */
export const ErrorBody = Type.Object({
  error: Type.String({ description: 'Why the call failed, for people.' }),
  field: Type.Optional(Type.String({ description: 'The input that caused it, when one did.' }))
}, { additionalProperties: false })
export type ErrorBodyType = Static<typeof ErrorBody>

/**
 * Stable error codes, shared by both styles: REST answers with the status, GraphQL with
 * `extensions.code` (see `graphqlCode`).
 */
export const errorCodes = {
  TANDEM_ERR_BAD_REQUEST: 400,
  TANDEM_ERR_UNAUTHENTICATED: 401,
  TANDEM_ERR_FORBIDDEN: 403,
  TANDEM_ERR_NOT_FOUND: 404,
  TANDEM_ERR_CONFLICT: 409,
  TANDEM_ERR_PRECONDITION_FAILED: 412,
  TANDEM_ERR_PAYLOAD_TOO_LARGE: 413,
  TANDEM_ERR_UNSUPPORTED_MEDIA_TYPE: 415,
  TANDEM_ERR_UNPROCESSABLE: 422,
  TANDEM_ERR_RATE_LIMITED: 429,
  TANDEM_ERR_INTERNAL: 500,
  TANDEM_ERR_UNAVAILABLE: 503
} as const
export type ErrorCode = keyof typeof errorCodes

export class TandemError extends Error {
  override name = 'TandemError'
  readonly statusCode: number
  /** On a 429: when to try again, sent as `Retry-After`. */
  retryAfterSeconds?: number
  constructor (readonly code: ErrorCode, message: string, readonly field?: string) {
    super(message)
    this.statusCode = errorCodes[code]
  }
}

export const badRequest = (message: string, field?: string) => new TandemError('TANDEM_ERR_BAD_REQUEST', message, field)
export const unauthenticated = (message = 'authentication required') => new TandemError('TANDEM_ERR_UNAUTHENTICATED', message)
export const forbidden = (message = 'not allowed') => new TandemError('TANDEM_ERR_FORBIDDEN', message)
export const notFound = (what: string) => new TandemError('TANDEM_ERR_NOT_FOUND', `${what} not found`)
export const conflict = (message: string, field?: string) => new TandemError('TANDEM_ERR_CONFLICT', message, field)
export const unprocessable = (message: string, field?: string) => new TandemError('TANDEM_ERR_UNPROCESSABLE', message, field)
export const preconditionFailed = (message = 'the resource has changed (If-Match)') => new TandemError('TANDEM_ERR_PRECONDITION_FAILED', message)
export const rateLimited = (retryAfter: string) => new TandemError('TANDEM_ERR_RATE_LIMITED', `rate limit exceeded, retry in ${retryAfter}`)
/** A 429 that knows when the caller may try again (`Retry-After`). */
export const tooManyFor = (seconds: number) => Object.assign(rateLimited(`${seconds} seconds`), { retryAfterSeconds: seconds })
export const unavailable = (message = 'database unavailable') => new TandemError('TANDEM_ERR_UNAVAILABLE', message)

/**
 * `error` as the refusal of the item at `index` of a batch (an array POST, `create<Plural>`): its
 * `field` names the item, `[3].name` (`[3]` when it named none), and the message says which.
 * @example throw refusedItem(3, unprocessable('out of stock', 'items.0.quantity'))  // field "[3].items.0.quantity"
 */
export function refusedItem (index: number, error: TandemError): TandemError {
  const refused = new TandemError(error.code, `item ${index}: ${error.message}`, `[${index}]${error.field === undefined ? '' : `.${error.field}`}`)
  if (error.retryAfterSeconds !== undefined) refused.retryAfterSeconds = error.retryAfterSeconds
  return refused
}

const graphqlCodes: Partial<Record<ErrorCode, string>> = {
  TANDEM_ERR_BAD_REQUEST: 'BAD_USER_INPUT',
  TANDEM_ERR_UNAUTHENTICATED: 'UNAUTHENTICATED',
  TANDEM_ERR_FORBIDDEN: 'FORBIDDEN',
  TANDEM_ERR_NOT_FOUND: 'NOT_FOUND',
  TANDEM_ERR_CONFLICT: 'CONFLICT',
  TANDEM_ERR_UNPROCESSABLE: 'BAD_USER_INPUT',
  TANDEM_ERR_RATE_LIMITED: 'RATE_LIMITED',
  TANDEM_ERR_UNAVAILABLE: 'SERVICE_UNAVAILABLE'
}
export const graphqlCode = (code: ErrorCode): string => graphqlCodes[code] ?? 'INTERNAL_SERVER_ERROR'
