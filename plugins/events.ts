import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import mqemitter, { type MQEmitter } from 'mqemitter'
import type { TandemOptions } from '../schema/options.js'
import { useConfig } from './config.js'

/** What happened, after it committed: the topics GraphQL subscriptions listen to. */
export interface TandemEventMap {
  /** A post was created; `post` is its REST representation. */
  postCreated: { post: Record<string, unknown> & { id: number, author_id: number } }
  /** A comment was added; `comment` is its REST representation. */
  commentAdded: { comment: Record<string, unknown> & { id: number, post_id: number, author_id: number } }
}

export interface TandemEvents {
  /** The emitter behind it, in memory or shared through Redis; Mercurius subscriptions use it. */
  emitter: MQEmitter
  /** Publishes an event to every instance. Call it only after the write has committed. */
  publish<T extends keyof TandemEventMap>(topic: T, payload: TandemEventMap[T]): Promise<void>
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Tandem's event bus: what REST writes and GraphQL mutations publish, and subscriptions read. */
    tandemEvents: TandemEvents
  }
}

async function events (app: FastifyInstance, options: TandemOptions): Promise<void> {
  if (app.hasDecorator('tandemEvents')) return
  const config = useConfig(app, options)
  const emitter: MQEmitter = config.redisUrl === undefined
    ? mqemitter()
    // Loaded only when used, like ioredis (which it loads) in the rate limiter.
    : new ((await import('mqemitter-redis')).default as unknown as new (options: { connectionString: string }) => MQEmitter)({ connectionString: config.redisUrl })
  app.decorate('tandemEvents', {
    emitter,
    publish: (topic, payload) => new Promise<void>((resolve, reject) => {
      emitter.emit({ topic, payload }, (error?: Error) => { if (error !== undefined && error !== null) reject(error); else resolve() })
    })
  })
  app.addHook('onClose', async () => { await new Promise<void>((resolve) => emitter.close(() => resolve())) })
}

/**
 * One event bus for both styles: a REST write and a GraphQL mutation publish to it alike, and
 * subscriptions read from it. With `redisUrl` it is shared by every instance.
 * @example
 * await app.register(events, { redisUrl: 'redis://127.0.0.1:6379' })
 */
export default fp(events, { name: 'tandem-events', fastify: '5.x' })
