import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

const REAP_EVERY_MS = 100

/**
 * Lets `app.close()` finish once the requests in flight are answered. Fastify closes the
 * connections that are idle when it starts closing; one that is busy then stays open after its
 * response (keep-alive) and holds the shutdown until the client lets go or `keepAliveTimeout`
 * (72 s) passes. So, while closing, every response says `Connection: close`, and connections are
 * closed as soon as they fall idle.
 */
async function drain (app: FastifyInstance): Promise<void> {
  let closing = false
  app.addHook('preClose', async () => {
    closing = true
    const reaper = setInterval(() => { app.server.closeIdleConnections() }, REAP_EVERY_MS)
    reaper.unref()
    app.server.once('close', () => { clearInterval(reaper) })
  })
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })
}

export default fp(drain, { name: 'tandem-drain', fastify: '5.x' })
