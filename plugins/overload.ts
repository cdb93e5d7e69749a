import underPressure, { type FastifyUnderPressureOptions } from '@fastify/under-pressure'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { poolCounts } from '../db/connect.js'
import { unavailable, type ErrorBodyType } from '../schema/errors.js'
import type { TandemOptions } from '../schema/options.js'
import { useConfig } from './config.js'
import { toErrorResponse } from './errors.js'

/** How often the event loop's lag and the pool's queue are looked at (under-pressure's own default). */
const SAMPLE_EVERY_MS = 1000
/**
 * What an overloaded answer asks clients to wait: a few samples, so that an instance that sheds load
 * gets the time to work through what it has queued before the same clients come back.
 */
export const OVERLOAD_RETRY_AFTER_SECONDS = 5

/**
 * What a route may do with its requests while the server is overloaded (its `config.pressureHandler`):
 * under-pressure sends what it returns, other than nothing or a promise. Its types say `void` only.
 */
export type PressureHandler = (request: FastifyRequest, reply: FastifyReply, type: string, value: number | undefined) => unknown

const overloaded = toErrorResponse(unavailable('the server is overloaded; retry later'))

/**
 * The answer to a request that arrives while the server is overloaded: 503 in the contract's shape.
 * It is returned, not sent: under-pressure sends what a handler returns and stops there, while after
 * a handler that returns nothing it goes on with the request.
 */
const refuse: PressureHandler = (_request, reply): ErrorBodyType => {
  reply.code(overloaded.statusCode).header('retry-after', OVERLOAD_RETRY_AFTER_SECONDS).type('application/json')
  return overloaded.body
}

/** A route's `config.pressureHandler` that serves it whatever the load (`/health`). */
export const servedUnderPressure: PressureHandler = () => {}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * What to do with this route's requests while the server is overloaded (@fastify/under-pressure):
     * what it returns is the answer; returning nothing serves the request as usual.
     */
    pressureHandler?: PressureHandler
  }
}

/**
 * Overload protection for the whole application (@fastify/under-pressure): while the event loop
 * lags more than `overloadMaxEventLoopDelay` ms on average, or more than `overloadMaxPoolWaiting`
 * requests wait for a connection of a real server's pool, new requests are answered 503 with
 * `Retry-After` at once rather than queued behind the others. Both are sampled once a second by a
 * timer, so a request only compares the last samples with the limits. Registers nothing when both are 0 (or the database is
 * embedded and the event loop check is 0).
 * @example
 * await app.register(overload, { overloadMaxEventLoopDelay: 500, overloadMaxPoolWaiting: 100 })
 */
async function overload (app: FastifyInstance, options: TandemOptions): Promise<void> {
  const config = useConfig(app, options)
  const pool = app.hasDecorator('db') ? poolCounts(app.db) : undefined
  const maxPoolWaiting = pool === undefined ? 0 : config.overloadMaxPoolWaiting
  if (config.overloadMaxEventLoopDelay === 0 && maxPoolWaiting === 0) return
  await app.register(underPressure, {
    maxEventLoopDelay: config.overloadMaxEventLoopDelay,
    sampleInterval: SAMPLE_EVERY_MS,
    // under-pressure's external health check, sampled on its own timer: false means saturated.
    ...(pool === undefined || maxPoolWaiting === 0
      ? {}
      : { healthCheck: async () => pool.waitingCount <= maxPoolWaiting, healthCheckInterval: SAMPLE_EVERY_MS }),
    pressureHandler: refuse as FastifyUnderPressureOptions['pressureHandler']
  })
}

export default fp(overload, { name: 'tandem-overload', fastify: '5.x' })
