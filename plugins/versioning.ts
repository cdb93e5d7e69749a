import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { badRequest } from '../schema/errors.js'

export const SUPPORTED_VERSIONS: readonly string[] = ['1']
export const LATEST_VERSION = '1'

const vendorType = /application\/vnd\.api\.v([^+;,\s]+)\+json/i
const pathVersion = /^\/api\/v([^/?]+)(?:[/?]|$)/

declare module 'fastify' {
  interface FastifyRequest {
    /** The API version this request is served under. */
    apiVersion: string | null
    /** True when the client asked by `Accept: application/vnd.api.vN+json`. */
    vendorAccept: boolean
  }
}

function resolveVersion (request: FastifyRequest): { version: string, vendor: boolean } {
  const fromPath = pathVersion.exec(request.url)?.[1]
  const fromAccept = vendorType.exec(request.headers.accept ?? '')?.[1]
  const query = request.query as Record<string, unknown> | undefined
  const fromQuery = typeof query?.version === 'string' ? query.version : undefined
  const asked = [fromPath, fromAccept, fromQuery].filter((v): v is string => v !== undefined)
  for (const version of asked) {
    if (!SUPPORTED_VERSIONS.includes(version)) {
      throw badRequest(`the API version asked for is not one this server has; supported: ${SUPPORTED_VERSIONS.join(', ')}`, 'version')
    }
  }
  if (new Set(asked).size > 1) throw badRequest('the request asks for two different versions', 'version')
  return { version: asked[0] ?? LATEST_VERSION, vendor: fromAccept !== undefined }
}

/**
 * Serves `/api/v1/...` and, for the unversioned `/api/...`, the version asked for by
 * `Accept: application/vnd.api.vN+json` or `?version=N` (latest when neither).
 */
async function versioning (app: FastifyInstance): Promise<void> {
  app.decorateRequest('apiVersion', null)
  app.decorateRequest('vendorAccept', false)
  // Callback hooks: they run on every request, and an async one costs a promise each time (see
  // PERFORMANCE-DECISIONS.md, 'Per-request hooks as callbacks').
  app.addHook('onRequest', (request, _reply, done) => {
    let resolved: { version: string, vendor: boolean }
    try {
      resolved = resolveVersion(request)
    } catch (error) {
      done(error as Error)
      return
    }
    request.apiVersion = resolved.version
    request.vendorAccept = resolved.vendor
    done()
  })
  app.addHook('onSend', (request, reply, payload, done) => {
    const type = reply.getHeader('content-type')
    if (request.vendorAccept && typeof type === 'string' && type.startsWith('application/json')) {
      reply.header('content-type', `application/vnd.api.v${request.apiVersion ?? LATEST_VERSION}+json`)
    }
    done(null, payload)
  })
}

export default fp(versioning, { name: 'tandem-versioning', fastify: '5.x' })
