import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

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
    }
  })
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  await app.register(swaggerUi, { routePrefix: options.docsPath ?? '/docs', staticCSP: true })
}

export default fp(openapi, { name: 'tandem-openapi', fastify: '5.x' })
