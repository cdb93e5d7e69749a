// Telling subscribers of a write: one rule for both styles, built-in and declared resources alike.
import type { FastifyInstance } from 'fastify'
import type { TandemEventMap } from '../plugins/events.js'

/**
 * Tells the subscribers of `topic` of a write that has committed, when the event bus is there. Not
 * awaited: an answer never waits on the bus (Redis, say), and a failure to tell is logged and does
 * not undo the write.
 */
export function tellSubscribers<T extends keyof TandemEventMap> (app: FastifyInstance, topic: T, payload: TandemEventMap[T]): void
/** A declared resource's event (`labelCreated`…): its topic is the host's. */
export function tellSubscribers (app: FastifyInstance, topic: string, payload: object): void
export function tellSubscribers (app: FastifyInstance, topic: string, payload: object): void {
  if (!app.hasDecorator('tandemEvents')) return
  app.tandemEvents.emitter.emit({ topic, payload }, (err?: Error) => {
    if (err !== undefined && err !== null) app.log.warn({ err, topic }, 'could not publish an event')
  })
}
