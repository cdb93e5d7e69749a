import type { FastifyInstance, FastifySchema, FastifySchemaCompiler } from 'fastify'
import { resourceRoutes } from '../routes/index.js'
import { createAjv } from './ajv.js'
import { errorHandler, notFoundHandler } from './errors.js'
import idempotency from './idempotency.js'
import versioning from './versioning.js'

const textAjv = createAjv(true)
const bodyAjv = createAjv(false)

/** Query strings and params are text and coerced; JSON bodies are validated as sent. */
export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  const validate = (httpPart === 'body' ? bodyAjv : textAjv).compile(schema)
  return validate as ReturnType<FastifySchemaCompiler<object>>
}

/**
 * The resource style under `/api`: canonical `/api/v1/...`, and the unversioned `/api/...`
 * negotiated by `Accept` or `?version=`. Its error and not-found handlers answer in the
 * contract's shape without touching the host application's own.
 */
export async function restApi (app: FastifyInstance): Promise<void> {
  await app.register(async (api) => {
    api.setValidatorCompiler(validatorCompiler)
    api.setErrorHandler(errorHandler)
    api.setNotFoundHandler(notFoundHandler)
    // The API speaks JSON only: anything else is 415, not parsed as text.
    api.removeContentTypeParser(['text/plain'])
    // First of the scope's hooks, so every request under /api counts, unknown routes too;
    // /health and /ready are outside and never limited.
    if (app.hasDecorator('tandemRateLimit')) api.addHook('onRequest', app.tandemRateLimit)
    await api.register(versioning)
    // Before the routes: it attaches itself to every POST as they are added.
    await api.register(idempotency)
    await api.register(resourceRoutes, { prefix: '/v1' })
    await api.register(async (latest) => {
      latest.addHook('onRoute', (route) => { route.schema = { ...route.schema, hide: true } as FastifySchema })
      await latest.register(resourceRoutes)
    })
  }, { prefix: '/api' })
}
