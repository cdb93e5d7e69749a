import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

const IdempotencyKeyHeader = {
  type: 'object',
  properties: {
    'idempotency-key': {
      type: 'string',
      minLength: 1,
      maxLength: 255,
      description: 'Send the same key to retry safely: the first answer is replayed for 24 hours (Idempotent-Replayed: true), without a second write; the same key with another request is 422, while the first still runs 409.'
    }
  }
}

/** Whether the idempotency plugin serves the route: every POST whose answer may be replayed. */
function takesIdempotencyKey (method: string | string[], config: unknown): boolean {
  const isPost = Array.isArray(method) ? method.includes('POST') : method === 'POST'
  return isPost && (config as { replayable?: boolean } | undefined)?.replayable !== false
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * What the document says of the route beyond its schemas: a body and answers the route checks and
     * serializes by other means (an array `POST`'s, CONTRACT §14), in place of the schema's.
     */
    openapi?: { body?: unknown, responses?: Readonly<Record<string, unknown>> }
  }
}

export interface OpenApiOptions {
  /** Serve the interactive page at this path. @example '/docs' */
  docsPath?: string
}

/**
 * The OpenAPI 3.1 document generated from the route schemas, at `/openapi.json`, and a page to
 * read it. Registered before the routes so that it sees every one of them.
 */
async function openapi (app: FastifyInstance, options: OpenApiOptions): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Tandem API',
        version: '1.0.0',
        description: 'Users, posts, comments, products, orders and profiles, in resource style. Errors are `{error, field?}`.'
      },
      servers: [{ url: '/' }],
      components: {
        securitySchemes: { bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } }
      }
    },
    // The idempotency plugin reads the header itself (its errors name it `Idempotency-Key`), so it
    // is added to the document here rather than to the routes' validation.
    transform: ({ schema, url, route }) => {
      const documented = route.config?.openapi
      const described = documented === undefined
        ? schema
        : { ...schema, ...documented.body === undefined ? {} : { body: documented.body }, response: { ...(schema?.response as object | undefined), ...documented.responses } }
      if (!url.startsWith('/api/') || !takesIdempotencyKey(route.method, route.config)) return { schema: described, url }
      return { schema: { ...described, headers: { ...IdempotencyKeyHeader, ...(described?.headers as object | undefined) } }, url }
    }
  })
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  await app.register(swaggerUi, { routePrefix: options.docsPath ?? '/docs', staticCSP: true })
}

export default fp(openapi, { name: 'tandem-openapi', fastify: '5.x' })
