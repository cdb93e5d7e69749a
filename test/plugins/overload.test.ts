// Overload (CONTRACT §12): a saturated event loop or pool answers new requests 503 with Retry-After.
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { connect, type Db } from '../../db/connect.js'
import { configFromEnv, ConfigError, validateOptions } from '../../plugins/config.js'
import { serverOptions } from '../../plugins/server-options.js'
import tandem, { type TandemPluginOptions } from '../../app/tandem.js'
import { body, TEST_SECRET, testDb } from '../helpers/app.js'
import { wireDatabase } from '../helpers/database.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const BLOCK_MS = 1500

/** Tandem over `db` with a host route that keeps the event loop busy for `BLOCK_MS`, as a CPU-bound handler would. */
async function app (t: Test, db: Db, options: TandemPluginOptions): Promise<FastifyInstance> {
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  await app.register(tandem, { db, jwtSecret: TEST_SECRET, rootHandlers: true, ...options })
  app.get('/busy', async () => {
    const until = Date.now() + BLOCK_MS
    while (Date.now() < until);
    return { done: true }
  })
  await app.ready()
  t.teardown(() => app.close())
  return app
}

/** `round`, then a request to `url`, again until that request is refused (at most `rounds` times); its answer. */
async function untilRefused (app: FastifyInstance, url: string, round: () => Promise<unknown>, rounds = 30): Promise<LightMyRequestResponse> {
  for (let i = 0; ; i++) {
    await round()
    const res = await app.inject({ url })
    if (res.statusCode === 503 || i === rounds) return res
  }
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The status of `/api/v1/products` once it is no longer 503 (asking every 200 ms, for up to 10 s). */
async function servedOnceFree (server: FastifyInstance): Promise<number> {
  let status = 503
  for (let i = 0; i < 50 && status === 503; i++) {
    status = (await server.inject({ url: '/api/v1/products' })).statusCode
    if (status === 503) await pause(200)
  }
  return status
}

function assertOverloaded (t: Test, res: LightMyRequestResponse, what: string): void {
  t.equal(res.statusCode, 503, what)
  t.equal(res.headers['retry-after'], '5', `${what}: Retry-After in seconds`)
  t.match(res.headers['content-type'], /^application\/json/, what)
  t.same(body(res), { error: 'the server is overloaded; retry later' }, `${what}: the contract's error shape`)
}

t.test('an event loop lagging past overloadMaxEventLoopDelay: new requests get 503 with Retry-After, /health still 200', async (t) => {
  const server = await app(t, await testDb(), { overloadMaxEventLoopDelay: 100 })
  // Starting the application lags the loop itself, more so on a busy machine: wait for it to settle.
  t.equal(await servedOnceFree(server), 200, 'served while the loop is free')

  const refused = await untilRefused(server, '/api/v1/products', () => server.inject({ url: '/busy' }))
  assertOverloaded(t, refused, 'a REST request')
  const health = await server.inject({ url: '/health' })
  t.equal(health.statusCode, 200, '/health answers all the same')
  t.same(body(health), { status: 'ok' })
  t.equal(health.headers['retry-after'], undefined)

  t.equal(await servedOnceFree(server), 200, 'served again once the loop is free')
})

t.test('more requests waiting for the pool than overloadMaxPoolWaiting: new requests get 503, until the queue drains', async (t) => {
  const db = await connect({ databaseUrl: await wireDatabase(t), poolSize: 1 })
  t.teardown(() => db.destroy())
  const server = await app(t, db, { overloadMaxPoolWaiting: 1, overloadMaxEventLoopDelay: 0 })
  t.equal((await server.inject({ url: '/api/v1/nope' })).statusCode, 404, 'answered while the pool is free')

  // The pool's only connection is held, and two requests wait for it.
  let release = (): void => {}
  const held = new Promise<void>((resolve) => { release = resolve })
  let acquired = (): void => {}
  const holding = new Promise<void>((resolve) => { acquired = resolve })
  const holder = db.connection().execute(async () => { acquired(); await held })
  await holding
  const queued = [server.inject({ url: '/api/v1/products' }), server.inject({ url: '/api/v1/products' })]

  const refused = await untilRefused(server, '/api/v1/nope', () => pause(100), 100)
  assertOverloaded(t, refused, 'a request that needs no database')
  assertOverloaded(t, await server.inject({ method: 'POST', url: '/graphql', payload: { query: '{ __typename }' } }), 'a GraphQL request')
  assertOverloaded(t, await server.inject({ url: '/busy' }), 'a host route')
  t.equal((await server.inject({ url: '/health' })).statusCode, 200, '/health answers')
  const ready = await server.inject({ url: '/ready' })
  t.equal(ready.statusCode, 503, '/ready tells a load balancer to send requests elsewhere')
  t.equal(ready.headers['retry-after'], '5')
  t.same(body(ready), { status: 'unavailable', error: 'the server is overloaded' })

  release()
  await holder
  t.same((await Promise.all(queued)).map((res) => res.statusCode), [200, 200], 'the requests already queued are served')
  let recovered: number | undefined
  for (let i = 0; i < 50 && recovered !== 404; i++) {
    await pause(100)
    recovered = (await server.inject({ url: '/api/v1/nope' })).statusCode
  }
  t.equal(recovered, 404, 'new requests are served again once the queue is gone')
})

t.test('the settings: defaults, environment, and 0 for off', async (t) => {
  const defaults = validateOptions({})
  t.equal(defaults.overloadMaxEventLoopDelay, 1000)
  t.equal(defaults.overloadMaxPoolWaiting, 500)
  t.equal(configFromEnv({ OVERLOAD_MAX_EVENT_LOOP_DELAY: '250', OVERLOAD_MAX_POOL_WAITING: '0' }).overloadMaxEventLoopDelay, 250)
  t.throws(() => configFromEnv({ OVERLOAD_MAX_POOL_WAITING: '-1' }), ConfigError)
  t.throws(() => configFromEnv({ OVERLOAD_MAX_EVENT_LOOP_DELAY: 'soon' }), /OVERLOAD_MAX_EVENT_LOOP_DELAY/)

  const off = await app(t, await testDb(), { overloadMaxEventLoopDelay: 0, overloadMaxPoolWaiting: 0 })
  t.notOk(off.hasDecorator('isUnderPressure'), 'both 0: under-pressure is not registered, no hook runs')
  await off.inject({ url: '/busy' })
  t.equal((await off.inject({ url: '/api/v1/products' })).statusCode, 200, 'and a lagging loop refuses nothing')
})
