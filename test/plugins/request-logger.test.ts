import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { serverOptions } from '../../plugins/server-options.js'

type Line = Record<string, unknown>

/** A server with Tandem's server options at `level`, its log lines parsed into `lines`. */
async function loggedServer (t: Test, level: string): Promise<{ app: FastifyInstance, lines: Line[] }> {
  const lines: Line[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(...String(chunk).split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Line)); done() } })
  const options = serverOptions({ logLevel: level as 'info' })
  const app = Fastify({ ...options, logger: { ...(options.logger as object), stream } })
  app.get('/ok', async () => ({ ok: true }))
  app.get('/boom', async () => { throw new Error('boom') })
  app.get('/warned', async (request) => {
    request.log.warn({ body: { password: 'hunter2' } }, 'careful')
    request.log.child({ part: 'inner' }).warn('from a child')
    return { level: request.log.level }
  })
  app.get('/chatty', { logLevel: 'debug' }, async (request) => {
    request.log.debug('route-level debug')
    return {}
  })
  await app.ready()
  t.teardown(() => app.close())
  return { app, lines }
}

const withId = (id: string) => ({ headers: { 'x-request-id': id } })

t.test('at warn a request that logs nothing writes nothing; one that logs carries its request id', async (t) => {
  const { app, lines } = await loggedServer(t, 'warn')
  t.equal((await app.inject({ url: '/ok', ...withId('quiet-1') })).statusCode, 200)
  t.same(lines, [], 'a served request below the level writes no line')

  const warned = await app.inject({ url: '/warned', ...withId('warned-1') })
  t.same(warned.json(), { level: 'warn' }, 'the request logger reports the level in force')
  const careful = lines.find((line) => line.msg === 'careful')
  t.equal(careful?.reqId, 'warned-1', 'its line names the request')
  t.same(careful?.body, { password: '[redacted]' }, 'and redaction still applies')
  const child = lines.find((line) => line.msg === 'from a child')
  t.match(child, { reqId: 'warned-1', part: 'inner' }, 'a child of the request logger keeps the request id')

  await app.inject({ url: '/boom', ...withId('boom-1') })
  t.match(lines.find((line) => line.level === 50), { reqId: 'boom-1' }, 'a failed request logs its error with its id')
  t.notOk(lines.some((line) => line.msg === 'incoming request'), 'info lines stay off')
})

t.test('at info every request is logged with its id, as Fastify logs it', async (t) => {
  const { app, lines } = await loggedServer(t, 'info')
  await app.inject({ url: '/ok', ...withId('info-1') })
  t.same(lines.filter((line) => line.reqId === 'info-1').map((line) => line.msg), ['incoming request', 'request completed'])
  t.match(lines[0], { req: { method: 'GET', url: '/ok' } }, 'with the request serializer')
})

t.test('a route with a log level of its own logs at that level', async (t) => {
  const { app, lines } = await loggedServer(t, 'warn')
  await app.inject({ url: '/chatty', ...withId('chatty-1') })
  t.match(lines.find((line) => line.msg === 'route-level debug'), { reqId: 'chatty-1', level: 20 })
})
