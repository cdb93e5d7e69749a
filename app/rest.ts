import type { FastifyInstance, FastifyPluginAsync, FastifySchema } from 'fastify'
import { authRoutes } from '../routes/index.js'
import { declaredRoutes } from '../routes/resource.js'
import { servedResources } from '../rules/built-in-resources.js'
import type { Resource } from '../schema/resource.js'
import { validatorCompiler } from '../plugins/ajv.js'
import { serializerCompiler } from '../plugins/serializers.js'
import { errorHandler, notFoundHandler } from '../plugins/errors.js'
import idempotency from '../plugins/idempotency.js'
import versioning from '../plugins/versioning.js'

/**
 * Makes an encapsulated scope answer as the resource style does: its validation, its responses'
 * serializers (compiled once per schema), the contract's error shape, JSON bodies only, the
 * per-caller rate limit (when Tandem's rate-limit plugin is registered and `rateLimit` is not
 * false) and `Idempotency-Key` on every POST added after it.
 */
export async function restScope (scope: FastifyInstance, options: { rateLimit?: boolean } = {}): Promise<void> {
  scope.setValidatorCompiler(validatorCompiler)
  scope.setSerializerCompiler(serializerCompiler)
  scope.setErrorHandler(errorHandler)
  // The API speaks JSON only: anything else is 415, not parsed as text.
  scope.removeContentTypeParser(['text/plain'])
  // First of the scope's hooks, so every request counts, unknown routes too.
  if (options.rateLimit !== false && scope.hasDecorator('tandemRateLimit')) scope.addHook('onRequest', scope.tandemRateLimit)
  // Before the routes: it attaches itself to every POST as they are added.
  await scope.register(idempotency)
}

/**
 * The resource style under `/api`: the built-in resources and the host's declared `resources`, at
 * canonical `/api/v1/...`, and the unversioned `/api/...`
 * negotiated by `Accept` or `?version=`. Its error and not-found handlers answer in the
 * contract's shape without touching the host application's own.
 */
export async function restApi (app: FastifyInstance, resources: readonly Resource[] = []): Promise<void> {
  const served = servedResources(resources)
  const routes: FastifyPluginAsync = async (version) => {
    await version.register(authRoutes)
    for (const resource of served) await version.register(declaredRoutes(resource, served))
  }
  await app.register(async (api) => {
    // /health and /ready are outside this scope and never limited.
    await restScope(api)
    api.setNotFoundHandler(notFoundHandler)
    await api.register(versioning)
    await api.register(routes, { prefix: '/v1' })
    await api.register(async (latest) => {
      latest.addHook('onRoute', (route) => { route.schema = { ...route.schema, hide: true } as FastifySchema })
      await latest.register(routes)
    })
  }, { prefix: '/api' })
}
