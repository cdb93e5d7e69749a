import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { fromDatabaseError } from '../db/errors.js'
import { TandemError, type ErrorBodyType } from '../schema/errors.js'

interface ValidationIssue {
  instancePath: string
  keyword: string
  message?: string
  params: Record<string, unknown>
}

const fastifyErrors: Record<string, [number, string]> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: [415, 'unsupported content type; send application/json'],
  FST_ERR_CTP_BODY_TOO_LARGE: [413, 'request body is larger than 1 MiB'],
  FST_ERR_CTP_INVALID_JSON_BODY: [400, 'request body is not valid JSON'],
  FST_ERR_CTP_EMPTY_JSON_BODY: [400, 'request body is empty; send a JSON object'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: [400, 'Content-Length does not match the body'],
  FST_ERR_BAD_URL: [400, 'the URL is malformed'],
  FST_ERR_MAX_PARAM_LENGTH: [400, 'a path parameter is longer than 200 characters']
}

/** Turns the first schema violation into the contract's `{error, field}`. */
function fromValidation (issues: ValidationIssue[], context: string | undefined): ErrorBodyType {
  const issue = issues[0]
  if (issue === undefined) return { error: 'invalid input' }
  const path = issue.instancePath.split('/').filter(Boolean).join('.')
  const { missingProperty, additionalProperty, allowedValues } = issue.params
  if (typeof missingProperty === 'string') {
    const field = path === '' ? missingProperty : `${path}.${missingProperty}`
    return { error: `${field} is required`, field }
  }
  if (typeof additionalProperty === 'string') {
    const field = path === '' ? additionalProperty : `${path}.${additionalProperty}`
    return { error: `${field} is not a known ${context === 'querystring' ? 'parameter' : 'property'}`, field }
  }
  if (path === '') return { error: `${context ?? 'input'} ${issue.message ?? 'is invalid'}` }
  const allowed = Array.isArray(allowedValues) ? `: ${allowedValues.join(', ')}` : ''
  return { error: `${path} ${issue.message ?? 'is invalid'}${allowed}`, field: path }
}

/** Maps any error to a status and the contract's body; 5xx never carries internals. */
export function toErrorResponse (error: FastifyError | Error): { statusCode: number, body: ErrorBodyType } {
  if (error instanceof TandemError) {
    return { statusCode: error.statusCode, body: error.field === undefined ? { error: error.message } : { error: error.message, field: error.field } }
  }
  const e = error as FastifyError & { validation?: ValidationIssue[] }
  if (Array.isArray(e.validation)) return { statusCode: 400, body: fromValidation(e.validation, e.validationContext) }
  const known = e.code === undefined ? undefined : fastifyErrors[e.code]
  if (known !== undefined) return { statusCode: known[0], body: { error: known[1] } }
  const database = fromDatabaseError(error)
  if (database !== undefined) return toErrorResponse(database)
  const status = e.statusCode ?? 500
  if (status >= 400 && status < 500) return { statusCode: status, body: { error: e.message } }
  if (status === 503) return { statusCode: 503, body: { error: 'service unavailable' } }
  return { statusCode: 500, body: { error: 'internal server error' } }
}

export async function errorHandler (this: FastifyInstance, error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const { statusCode, body } = toErrorResponse(error)
  if (statusCode >= 500) request.log.error({ err: error }, 'request failed')
  else request.log.info({ err: { message: error.message, code: error.code }, statusCode }, 'request rejected')
  if (statusCode === 401) reply.header('www-authenticate', 'Bearer')
  if (error instanceof TandemError && error.retryAfterSeconds !== undefined) reply.header('retry-after', error.retryAfterSeconds)
  return reply.code(statusCode).type('application/json').send(body)
}

export async function notFoundHandler (request: FastifyRequest, reply: FastifyReply) {
  return reply.code(404).type('application/json').send({ error: `no route ${request.method} ${(request.url.split('?')[0] ?? '').slice(0, 200)}` })
}
