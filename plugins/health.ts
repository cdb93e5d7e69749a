import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Type } from '@sinclair/typebox'
import { ping } from '../db/health.js'
import { readRouterOf } from '../db/replicas.js'
import { OVERLOAD_RETRY_AFTER_SECONDS, servedUnderPressure, type PressureHandler } from './overload.js'

const Pool = Type.Object({
  pool: Type.String(),
  state: Type.String(),
  reads: Type.Integer(),
  lag_seconds: Type.Optional(Type.Union([Type.Number(), Type.Null()]))
})
const Status = Type.Object({ status: Type.String(), error: Type.Optional(Type.String()), pools: Type.Optional(Type.Array(Pool)) })
const READY_TIMEOUT_MS = 2_000

/**
 * `/health` answers while the process lives, overloaded or not; `/ready` only while the database
 * answers too and the server is not overloaded (a load balancer then sends its requests elsewhere),
 * with each pool's reads, state and lag when there are read replicas.
 */
async function health (app: FastifyInstance): Promise<void> {
  // With read replicas, each pool as it stands (a replica down or lagging leaves the instance ready: its reads go elsewhere).
  const poolsOf = () => {
    const router = readRouterOf(app.db)
    if (router === undefined) return {}
    return { pools: router.report().map(({ pool, state, reads, lagSeconds }) => ({ pool, state, reads, ...lagSeconds === undefined ? {} : { lag_seconds: lagSeconds } })) }
  }
  app.get('/health', { schema: { hide: true, response: { 200: Status } }, config: { pressureHandler: servedUnderPressure } }, async () => ({ status: 'ok' }))
  const overloaded: PressureHandler = (_request, reply) => {
    reply.code(503).header('retry-after', OVERLOAD_RETRY_AFTER_SECONDS)
    return { status: 'unavailable', error: 'the server is overloaded' }
  }
  app.get('/ready', { schema: { hide: true, response: { 200: Status, 503: Status } }, config: { pressureHandler: overloaded } }, async (_request, reply) => {
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), READY_TIMEOUT_MS)
    })
    try {
      await Promise.race([ping(app.db), timeout])
      return { status: 'ok', ...poolsOf() }
    } catch {
      return reply.code(503).send({ status: 'unavailable', error: 'database unavailable', ...poolsOf() })
    } finally {
      clearTimeout(timer)
    }
  })
}

export default fp(health, { name: 'tandem-health', fastify: '5.x', dependencies: ['tandem-database'] })
