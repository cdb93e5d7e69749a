// A host application that takes Tandem à la carte: its own hook, error handler and routes, plus
// Tandem's database, tokens, users API (under /v2api) and GraphQL (at /graphql).
// Run it with `npx tsx examples/host-app.ts` once the package is built (or installed).
import { pathToFileURL } from 'node:url'
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify'
import { auth, authRoutes, database, graphql, usersRoutes } from 'tandem-api'

export interface HostOptions {
  /** Without one, an embedded database: in memory, or stored in `dataDir`. */
  databaseUrl?: string
  dataDir?: string
  jwtSecret?: string
  logger?: boolean
}

export async function buildHost (options: HostOptions = {}): Promise<FastifyInstance> {
  // The embedded database compiles PostgreSQL (WebAssembly) as it starts: allow a busy machine time.
  const app = Fastify({ logger: options.logger ?? false, pluginTimeout: 60_000 })

  // The host's own hook, error handler and routes: Tandem leaves them alone.
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.header('x-served-by', 'host-app')
    return payload
  })
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    return reply.code(error.statusCode ?? 500).send({ ok: false, message: error.message })
  })
  app.get('/hello', async () => ({ hello: 'world' }))
  app.get('/boom', async () => { throw new Error('the host failed') })

  // Tandem's parts. Its routes answer in Tandem's error shape, inside their own scope.
  await app.register(database, { databaseUrl: options.databaseUrl, dataDir: options.dataDir })
  await app.register(auth, { jwtSecret: options.jwtSecret })
  await app.register(authRoutes, { prefix: '/v2api' })
  await app.register(usersRoutes, { prefix: '/v2api' })
  await app.register(graphql, { graphiql: false })

  // A host route guarded by Tandem's tokens (a 401 here goes through the host's error handler).
  app.get('/whoami', { config: { auth: 'authenticated' } }, async (request) => ({ userId: request.user.sub }))
  return app
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const app = await buildHost({ databaseUrl: process.env.DATABASE_URL, jwtSecret: process.env.JWT_SECRET, logger: true })
  await app.listen({ port: Number(process.env.PORT ?? 3000) })
}
