// Telling subscribers of a write: one rule for both styles, built-in and declared resources alike.
import type { FastifyInstance } from 'fastify'
import type { TandemEventMap } from '../plugins/events.js'

/**
 * Tells the subscribers of a built-in topic of a write that has committed, when the event bus is
 * there. Not awaited: an answer never waits on the bus (Redis, say), and a failure to tell, thrown
 * or called back, is logged and does not undo the write.
 */
export function tellSubscribers<T extends keyof TandemEventMap> (app: FastifyInstance, topic: T, payload: TandemEventMap[T]): void {
  tell(app, topic, payload)
}

/** The same for a declared resource's topic (`labelCreated`…), which Tandem's event map does not know. */
export function tellDeclaredSubscribers (app: FastifyInstance, topic: string, payload: object): void {
  tell(app, topic, payload)
}

function tell (app: FastifyInstance, topic: string, payload: object): void {
  if (!app.hasDecorator('tandemEvents')) return
  const failed = (err: unknown) => { app.log.warn({ err, topic }, 'could not publish an event') }
  try {
    app.tandemEvents.emitter.emit({ topic, payload }, (err?: Error) => { if (err !== undefined && err !== null) failed(err) })
  } catch (err) {
    // In-memory delivery runs the listeners inside `emit`, and a Redis emitter encodes there.
    failed(err)
  }
}
