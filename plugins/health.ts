import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Type } from '@sinclair/typebox'
import { ping } from '../db/health.js'

const Status = Type.Object({ status: Type.String(), error: Type.Optional(Type.String()) })
const READY_TIMEOUT_MS = 2_000

/** `/health` answers while the process lives; `/ready` only while the database answers too. */
async function health (app: FastifyInstance): Promise<void> {
  app.get('/health', { schema: { hide: true, response: { 200: Status } } }, async () => ({ status: 'ok' }))
  app.get('/ready', { schema: { hide: true, response: { 200: Status, 503: Status } } }, async (_request, reply) => {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), READY_TIMEOUT_MS)
    })
    try {
      await Promise.race([ping(app.db), timeout])
      return { status: 'ok' }
    } catch {
      return reply.code(503).send({ status: 'unavailable', error: 'database unavailable' })
    } finally {
      clearTimeout(timer)
    }
  })
}

export default fp(health, { name: 'tandem-health', fastify: '5.x', dependencies: ['tandem-database'] })
