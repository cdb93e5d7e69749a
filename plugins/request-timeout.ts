import type { FastifyInstance, preParsingAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { TandemOptions } from '../schema/options.js'
import { useConfig } from './config.js'

/**
 * A request whose body has not arrived `requestTimeout` ms after it began is answered 408 and its
 * connection closed. Node's own `requestTimeout` stops counting once the headers are in and the
 * request is handed over, so a client sending its body a byte at a time would hold a socket and a
 * parser for as long as it likes.
 */
async function requestTimeout (app: FastifyInstance, options: TandemOptions): Promise<void> {
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
