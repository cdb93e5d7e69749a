import type { FastifyInstance, FastifyReply, FastifyRequest, preParsingAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { TandemOptions } from '../schema/options.js'
import { useConfig } from './config.js'

/** How much of an unread body is read (and dropped) before an early answer, and for how long. */
const MAX_DISCARDED_BYTES = 16 * 1024 * 1024
const MAX_DISCARD_MS = 5_000

/**
 * Reads the rest of a body that will not be used. An answer sent before the body is in (a 413, a
 * 429 or 401 from an `onRequest` hook) makes Node close the connection while the client is still
 * sending: it gets a broken pipe instead of the answer. Past the bounds the connection closes anyway.
 */
/** `complete`: Node's parser has the whole message (a GET at once); `readableEnded`: it was read. */
const isRead = (raw: FastifyRequest['raw']): boolean => raw.complete || raw.readableEnded || raw.destroyed

async function discardBody (raw: FastifyRequest['raw']): Promise<void> {
  if (isRead(raw)) return
  await new Promise<void>((resolve) => {
    let received = 0
    const stop = (): void => {
      clearTimeout(timer)
      raw.removeListener('data', count)
      resolve()
    }
    const count = (chunk: Buffer): void => {
      received += chunk.length
      if (received > MAX_DISCARDED_BYTES) stop()
    }
    const timer = setTimeout(stop, MAX_DISCARD_MS)
    raw.on('data', count).once('end', stop).once('close', stop).once('error', stop)
    raw.resume()
  })
}

/**
 * Request bodies: one that has not arrived `requestTimeout` ms after its request began is answered
 * 408 and its connection closed; one that an answer comes before is read to the end first. Node's own `requestTimeout` stops counting once the headers are in and the
 * request is handed over, so a client sending its body a byte at a time would hold a socket and a
 * parser for as long as it likes.
 */
async function requestTimeout (app: FastifyInstance, options: TandemOptions): Promise<void> {
  // Before any answer, the rest of an unread body is read, so that the client can read the answer.
  // A callback hook: on nearly every answer there is nothing to read, and no promise is made then.
  const drain = (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void): void => {
    // A 408 is the answer to a body that does not come: it is not waited for.
    if (reply.statusCode === 408 || isRead(request.raw)) {
      done(null, payload)
      return
    }
    discardBody(request.raw).then(() => { done(null, payload) }, () => { done(null, payload) })
  }
  app.addHook('onSend', drain)
  const limit = useConfig(app, options).requestTimeout
  if (limit === 0) return
  const guard: preParsingAsyncHookHandler = async (request, reply) => {
    const raw = request.raw
    if (raw.complete) return
    // The hook runs once the headers are in; what they took counts too.
    const left = Math.max(0, limit - reply.elapsedTime)
    const timer = setTimeout(() => {
      if (reply.sent) return
      // Closed once the answer is out: the rest of the body is not waited for.
      reply.raw.once('finish', () => { raw.destroy() })
      reply.code(408).header('connection', 'close').type('application/json')
        .send({ error: `the request was not received within ${limit} ms` })
    }, left)
    const done = (): void => { clearTimeout(timer) }
    raw.once('end', done).once('close', done)
    reply.raw.once('close', done)
  }
  app.addHook('preParsing', guard)
}

export default fp(requestTimeout, { name: 'tandem-request-timeout', fastify: '5.x' })
