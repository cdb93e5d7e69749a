// A host application that takes all of Tandem at once: /api/v1, /graphql, /health, /ready and
// /docs beside its own routes, which keep their own error handler.
// Run it with `npx tsx examples/all-in-one.ts` once the package is built (or installed).
import { pathToFileURL } from 'node:url'
import Fastify, { type FastifyError, type FastifyInstance } from 'fastify'
import { tandem, type TandemOptions } from 'tandem-api'

export async function buildHost (options: TandemOptions & { logger?: boolean } = {}): Promise<FastifyInstance> {
  const { logger, ...tandemOptions } = options
  const app = Fastify({ logger: logger ?? false, pluginTimeout: 60_000 })
  app.setErrorHandler((error: FastifyError, _request, reply) => {
    return reply.code(error.statusCode ?? 500).send({ ok: false, message: error.message })
  })
  app.get('/hello', async () => ({ hello: 'world' }))
  app.get('/boom', async () => { throw new Error('the host failed') })

  await app.register(tandem, tandemOptions)
  return app
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const app = await buildHost({ databaseUrl: process.env.DATABASE_URL, jwtSecret: process.env.JWT_SECRET, logger: true })
  await app.listen({ port: Number(process.env.PORT ?? 3000) })
}
