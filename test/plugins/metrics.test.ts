import { once } from 'node:events'
import Fastify, { type FastifyInstance, type HTTPMethods } from 'fastify'
import t from 'tap'
import WebSocket from 'ws'
import { connect, poolCounts } from '../../db/connect.js'
import { MAX_OPERATION_NAMES, OPERATION_LABELS, UNMATCHED_ROUTE } from '../../plugins/metrics.js'
import { ATTEMPT_LIMITS } from '../../plugins/rate-limit.js'
import { serverOptions } from '../../plugins/server-options.js'
import tandem from '../../app/tandem.js'
import { build, errorCodes, freePort, graphql, signedIn, startServer, TEST_SECRET, testDb } from '../helpers/app.js'
import { wireDatabase } from '../helpers/database.js'

interface Sample { name: string, labels: Record<string, string>, value: number }
interface Scrape { samples: Sample[], types: Map<string, string> }

const unescape = (value: string): string => value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))

/** The Prometheus text format (0.0.4), as far as these tests read it: samples and their `# TYPE`. */
function parsePrometheus (text: string): Scrape {
  const samples: Sample[] = []
  const types = new Map<string, string>()
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    const type = /^# TYPE (\S+) (\S+)$/.exec(line)
    if (type !== null) types.set(type[1] as string, type[2] as string)
    if (line.startsWith('#')) continue
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: \d+)?$/.exec(line)
    if (sample === null) throw new Error(`not a Prometheus sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, key, value] of (sample[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[key as string] = unescape(value as string)
    samples.push({ name: sample[1] as string, labels, value: Number(sample[3]) })
  }
  return { samples, types }
}

/** The sum of the samples of `name` whose labels include `labels`. */
function total (scrape: Scrape, name: string, labels: Record<string, string> = {}): number {
  return scrape.samples
    .filter((s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value))
    .reduce((sum, s) => sum + s.value, 0)
}

const has = (scrape: Scrape, name: string): boolean => scrape.samples.some((s) => s.name === name)

async function scrape (app: FastifyInstance): Promise<Scrape> {
  const res = await app.inject('/metrics')
  if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}`)
  return parsePrometheus(res.body)
}

/** Scrapes until `done` holds (the server handles WebSocket messages on its own time). */
async function scrapeUntil (app: FastifyInstance, done: (scrape: Scrape) => boolean): Promise<Scrape> {
  const deadline = Date.now() + 10_000
  for (;;) {
    const current = await scrape(app)
    if (done(current) || Date.now() > deadline) return current
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

const requests = 'http_request_duration_seconds_count'

t.test('off by default: no /metrics, nothing registered', async (t) => {
  const app = await build(t)
  t.equal((await app.inject('/metrics')).statusCode, 404)
  t.notOk(app.hasDecorator('tandemMetrics'))
  t.notOk(app.hasDecorator('tandemHttpMetrics'), 'fastify-metrics (and its hooks) not registered')
})

t.test('requests by route pattern and status; the scrape is neither limited, measured nor documented', async (t) => {
  const app = await build(t, { metrics: true, rateLimitMax: 3 })
  const before = await scrape(app)
  t.equal(before.types.get('http_request_duration_seconds'), 'histogram')
  t.equal(total(before, requests), 0)

  t.equal((await app.inject('/api/v1/products')).statusCode, 200)
  t.equal((await app.inject('/api/v1/products/999')).statusCode, 404)
  t.equal((await app.inject('/no/such/path/1')).statusCode, 404)
  t.equal((await app.inject('/no/such/path/2')).statusCode, 404)
  t.equal((await app.inject('/api/v1/products')).statusCode, 200)
  const limited = await app.inject('/api/v1/products')
  t.equal(limited.statusCode, 429)

  const after = await scrape(app)
  t.equal(total(after, requests, { method: 'GET', route: '/api/v1/products', status_code: '200' }), 2)
  t.equal(total(after, requests, { route: '/api/v1/products/:id', status_code: '404' }), 1, 'the pattern, not the id')
  t.equal(total(after, requests, { route: UNMATCHED_ROUTE, status_code: '404' }), 2, 'unknown URLs share one label')
  t.equal(total(after, requests, { route: '/api/v1/products', status_code: '429' }), 1)
  t.ok(total(after, 'http_request_duration_seconds_bucket', { route: '/api/v1/products', status_code: '200', le: '+Inf' }) === 2, 'latency buckets per series')
  t.notOk(after.samples.some((s) => Object.values(s.labels).some((v) => v.includes('/no/such') || v.includes('999'))), 'no raw URL in any label')
  t.equal(total(after, 'tandem_rate_limit_rejections_total', { limit: 'caller' }), 1)

  // The caller is over its limit, and /metrics still answers, without counting against it.
  for (let i = 0; i < 3; i++) {
    const res = await app.inject('/metrics')
    t.equal(res.statusCode, 200)
    t.equal(res.headers['ratelimit-limit'], undefined)
    t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  }
  t.notOk((await scrape(app)).samples.some((s) => s.labels.route === '/metrics'), 'scrapes are not measured')
  const openapi = JSON.parse((await app.inject('/openapi.json')).body) as { paths: Record<string, unknown> }
  t.notOk('/metrics' in openapi.paths, 'not in the OpenAPI document')
})

// Issue 37, finding 8: /metrics on the API's port answered anyone, unlimited.
t.test('regression: /metrics on the API\'s port answered anyone; now only metricsAllow (loopback by default), others as an unknown route', async (t) => {
  const outsider = '203.0.113.9'
  // What the application answers where it has no /metrics at all.
  const noSuchRoute = await (await build(t)).inject({ url: '/metrics', remoteAddress: outsider })
  t.equal(noSuchRoute.statusCode, 404)

  const app = await build(t, { metrics: true })
  const from = (remoteAddress: string, headers: Record<string, string> = {}) => app.inject({ url: '/metrics', remoteAddress, headers })
  for (const address of ['127.0.0.1', '127.8.9.10', '::1', '::ffff:127.0.0.1']) t.equal((await from(address)).statusCode, 200, `from ${address}`)
  const refused = await from(outsider)
  t.equal(refused.statusCode, 404, 'from elsewhere')
  t.equal(refused.body, noSuchRoute.body, 'the body of an unknown route')
  t.equal(refused.headers['content-type'], noSuchRoute.headers['content-type'])
  t.equal((await from('192.168.1.2')).statusCode, 404, 'a private address is not loopback')
  t.equal((await from('127.0.0.1', { 'x-forwarded-for': outsider })).statusCode, 404, 'a proxy on loopback does not open it to the clients it forwards')
  t.equal((await from('127.0.0.1', { 'x-forwarded-for': `127.0.0.1, ${outsider}` })).statusCode, 404, 'every forwarded address counts')
  t.equal((await from('127.0.0.1', { 'x-forwarded-for': 'not an address' })).statusCode, 404)
  t.equal((await from('127.0.0.1', { 'x-forwarded-for': '::1' })).statusCode, 200, 'forwarded for an allowed address')
  t.equal((await from('127.0.0.1', { forwarded: 'for=127.0.0.1' })).statusCode, 404, '`Forwarded` is not read: refused')

  const listed = await build(t, { metrics: true, metricsAllow: '10.0.0.0/8, 192.0.2.7' })
  const status = async (remoteAddress: string) => (await listed.inject({ url: '/metrics', remoteAddress })).statusCode
  t.same([await status('10.1.2.3'), await status('192.0.2.7'), await status('192.0.2.8'), await status('127.0.0.1')], [200, 200, 404, 404], 'metricsAllow replaces loopback')
})

t.test('with TRUST_PROXY the socket\'s peer decides: a client reaching the port directly cannot claim loopback in X-Forwarded-For', async (t) => {
  const app = Fastify(serverOptions({ logLevel: 'silent', trustProxy: '1' }))
  app.get('/ip', async (request) => ({ ip: request.ip }))
  await app.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET, rootHandlers: true, overloadMaxEventLoopDelay: 0, metrics: true })
  t.teardown(() => app.close())
  const forged = { remoteAddress: '203.0.113.9', headers: { 'x-forwarded-for': '127.0.0.1' } }
  t.same((await app.inject({ url: '/ip', ...forged })).json(), { ip: '127.0.0.1' }, 'the client\'s address says loopback')
  t.equal((await app.inject({ url: '/metrics', ...forged })).statusCode, 404, 'and /metrics is not served')
})

t.test('process metrics: the event-loop delay', async (t) => {
  const app = await build(t, { metrics: true })
  const metrics = await scrape(app)
  t.equal(metrics.types.get('nodejs_eventloop_lag_seconds'), 'gauge')
  t.ok(has(metrics, 'nodejs_eventloop_lag_p99_seconds'))
  t.ok(has(metrics, 'process_resident_memory_bytes'))
})

t.test('rate-limit rejections of the attempt limits, by limit', async (t) => {
  const app = await build(t, { metrics: true })
  const attempts = ATTEMPT_LIMITS.signUp.perAccount + 1
  const statuses: number[] = []
  for (let i = 0; i < attempts; i++) {
    // No password: nothing to hash, the attempt still counts.
    const res = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'Twice', email: 'twice@example.com' }, remoteAddress: '10.9.9.9' })
    statuses.push(res.statusCode)
  }
  t.equal(statuses.at(-1), 429)
  const metrics = await scrape(app)
  t.equal(total(metrics, 'tandem_rate_limit_rejections_total', { limit: 'signUp' }), 1)
  t.equal(total(metrics, 'tandem_rate_limit_rejections_total', { limit: 'caller' }), 0)
})

t.test('GraphQL operations by name and outcome, with a bounded set of names', async (t) => {
  const app = await build(t, { metrics: true })
  t.same((await graphql(app, 'query Typename { __typename }')).data, { __typename: 'Query' })
  await graphql(app, 'query Typename { __typename }')
  t.ok((await graphql(app, 'query Broken { noSuchField }')).errors, 'a validation error')
  t.ok((await graphql(app, 'query Users { users { id } }')).errors, 'an execution error: no token')
  await graphql(app, '{ __typename }')
  await graphql(app, '{ not graphql')
  const get = await app.inject({ url: '/graphql', query: { query: 'query A { __typename } query B { __typename }', operationName: 'B' } })
  t.equal(get.statusCode, 200)

  let metrics = await scrape(app)
  const operations = 'tandem_graphql_operations_total'
  t.equal(metrics.types.get(operations), 'counter')
  t.equal(total(metrics, operations, { operation: 'Typename', outcome: 'ok' }), 2)
  t.equal(total(metrics, operations, { operation: 'Broken' }), 0, 'a document that does not validate: not by its name')
  t.equal(total(metrics, operations, { operation: 'Users', outcome: 'error' }), 1)
  t.equal(total(metrics, operations, { operation: OPERATION_LABELS.anonymous, outcome: 'ok' }), 1)
  t.equal(total(metrics, operations, { operation: OPERATION_LABELS.unknown, outcome: 'error' }), 2, 'a document that does not validate, and one that does not parse')
  t.equal(total(metrics, operations, { operation: 'B', outcome: 'ok' }), 1, 'the operation the request chose')

  // A client sending a new name each time: past the cap they all count as one value.
  for (let i = 0; i < MAX_OPERATION_NAMES + 20; i++) await graphql(app, `query Name${i} { __typename }`)
  metrics = await scrape(app)
  const names = new Set(metrics.samples.filter((s) => s.name === operations).map((s) => s.labels.operation))
  t.ok(names.size <= MAX_OPERATION_NAMES + Object.keys(OPERATION_LABELS).length, `${names.size} label values`)
  t.ok(total(metrics, operations, { operation: OPERATION_LABELS.other, outcome: 'ok' }) >= 20)
  t.equal(total(metrics, operations, { operation: 'Typename', outcome: 'ok' }), 2, 'names seen before the cap keep their own series')
})

// Issue 37, finding 8: a document's name took one of the MAX_OPERATION_NAMES series before the
// document was validated, so anyone could spend them with documents that never run.
t.test('regression: names of documents that failed validation took the operation-name series; only operations that ran are named', async (t) => {
  const app = await build(t, { metrics: true, graphqlMaxComplexity: 50 })
  for (let i = 0; i < MAX_OPERATION_NAMES + 5; i++) {
    t.same(errorCodes(await graphql(app, `query Junk${i} { noSuchField }`)), ['GRAPHQL_VALIDATION_FAILED'])
  }
  // Valid, and refused by a limit checked after validation, before execution.
  t.same(errorCodes(await graphql(app, 'query TooCostly { products(limit: 100) { id } }')), ['COMPLEXITY_LIMIT_EXCEEDED'])
  t.same((await graphql(app, 'query Wanted { __typename }')).data, { __typename: 'Query' })

  const metrics = await scrape(app)
  const operations = 'tandem_graphql_operations_total'
  const names = metrics.samples.filter((s) => s.name === operations).map((s) => s.labels.operation)
  t.notOk(names.some((name) => name?.startsWith('Junk') === true || name === 'TooCostly'), 'no series for a refused document\'s name')
  t.equal(total(metrics, operations, { operation: OPERATION_LABELS.unknown, outcome: 'error' }), MAX_OPERATION_NAMES + 6, 'they count under one label')
  t.equal(total(metrics, operations, { operation: 'Wanted', outcome: 'ok' }), 1, 'a real operation still has its own series')
})

t.test('regression: each odd HTTP method added series; every method but GET, POST, PUT, PATCH and DELETE shares one label', async (t) => {
  const app = await build(t, { metrics: true })
  const odd = ['PROPFIND', 'MKCOL', 'LOCK', 'SEARCH', 'TRACE', 'PURGE', 'M-SEARCH']
  for (const method of odd) await app.inject({ method: method as HTTPMethods, url: '/anything' })
  t.equal((await app.inject({ method: 'DELETE', url: '/anything' })).statusCode, 404)

  const metrics = await scrape(app)
  const methods = new Set(metrics.samples.filter((s) => s.name === requests).map((s) => s.labels.method))
  t.same([...methods].sort(), ['DELETE', 'other'], 'one label for all the odd methods')
  t.equal(total(metrics, requests, { method: 'other', route: UNMATCHED_ROUTE }), odd.length, 'each of them counted')
})

t.test('subscriptions open, and subscribes refused by the rate limit', async (t) => {
  const app = await build(t, { metrics: true, rateLimitMax: 4 })
  const ann = await signedIn(app)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const socket = new WebSocket(`ws://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/graphql`, 'graphql-transport-ws')
  t.teardown(() => socket.close())
  const messages: Array<{ id?: string, type: string }> = []
  socket.on('message', (data: Buffer) => { messages.push(JSON.parse(data.toString()) as { id?: string, type: string }) })
  await once(socket, 'open')
  const send = (message: object) => { socket.send(JSON.stringify(message)) }
  send({ type: 'connection_init', payload: ann.headers })

  const open = 'tandem_graphql_subscriptions_open'
  t.equal(total(await scrape(app), open), 0)
  // The login spent one of the address's requests; the subscribes count as the user, 4 at most.
  for (const id of ['1', '2', '3', '4', '5']) send({ id, type: 'subscribe', payload: { query: 'subscription { postCreated { id } }' } })
  let metrics = await scrapeUntil(app, (m) => total(m, 'tandem_rate_limit_rejections_total', { limit: 'subscribe' }) > 0 && total(m, open) === 4)
  t.equal(total(metrics, open), 4)
  t.equal(total(metrics, 'tandem_rate_limit_rejections_total', { limit: 'subscribe' }), 1)
  t.ok(messages.some((m) => m.id === '5' && m.type === 'error'), 'the fifth was refused')

  send({ id: '1', type: 'complete' })
  metrics = await scrapeUntil(app, (m) => total(m, open) === 3)
  t.equal(total(metrics, open), 3, 'a completed subscription is no longer open')
  socket.close()
  metrics = await scrapeUntil(app, (m) => total(m, open) === 0)
  t.equal(total(metrics, open), 0, 'nor are those of a closed connection')
})

t.test('the database pool: in use and waiting on a real server\'s pool, absent on the embedded database', async (t) => {
  const embedded = poolCounts(await testDb()) === undefined
  const onTestDb = await scrape(await build(t, { metrics: true }))
  t.equal(has(onTestDb, 'tandem_db_pool_in_use'), !embedded, embedded ? 'PGlite has no pool' : 'the test database is a pool')

  // A pool of one connection, over the wire (a PostgreSQL server, or PGlite behind pglite-socket).
  const db = await connect({ databaseUrl: await wireDatabase(t), poolSize: 1 })
  t.teardown(() => db.destroy())
  const app = await build(t, { metrics: true, db })
  const idle = await scrape(app)
  t.equal(total(idle, 'tandem_db_pool_max'), 1)
  t.equal(total(idle, 'tandem_db_pool_in_use'), 0)
  t.equal(total(idle, 'tandem_db_pool_waiting'), 0)

  let waiting: Promise<unknown> | undefined
  const busy = await db.transaction().execute(async (trx) => {
    await trx.selectFrom('users').select('id').execute()
    // The only connection is in this transaction: this query waits for it.
    waiting = db.selectFrom('users').select('id').execute()
    return scrapeUntil(app, (m) => total(m, 'tandem_db_pool_waiting') === 1)
  })
  await waiting
  t.equal(total(busy, 'tandem_db_pool_in_use'), 1)
  t.equal(total(busy, 'tandem_db_pool_waiting'), 1)
  const after = await scrape(app)
  t.equal(total(after, 'tandem_db_pool_in_use'), 0)
  t.equal(total(after, 'tandem_db_pool_waiting'), 0)
})

t.test('metricsPort: a listener of its own, closed with the application', async (t) => {
  const port = await freePort()
  // metricsAllow is for the API's port: this listener is kept private by where it listens.
  const app = await build(t, { metricsPort: port, metricsAllow: '192.0.2.1' })
  t.equal((await app.inject('/api/v1/products')).statusCode, 200)
  t.equal((await app.inject('/metrics')).statusCode, 404, 'not on the API\'s port')

  const res = await fetch(`http://127.0.0.1:${port}/metrics`)
  t.equal(res.status, 200)
  const metrics = parsePrometheus(await res.text())
  t.equal(total(metrics, requests, { route: '/api/v1/products', status_code: '200' }), 1)
  t.equal((await fetch(`http://127.0.0.1:${port}/api/v1/products`)).status, 404, 'the listener serves nothing else')

  await app.close()
  await t.rejects(fetch(`http://127.0.0.1:${port}/metrics`), 'closed with the application')
})

t.test('METRICS_PORT on the server: metrics there, not on PORT', async (t) => {
  const metricsPort = await freePort()
  const server = await startServer(t, { METRICS_PORT: String(metricsPort) })
  t.equal((await fetch(`${server.url}/metrics`)).status, 404)
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
  t.equal(res.status, 200)
  t.ok(has(parsePrometheus(await res.text()), 'nodejs_eventloop_lag_seconds'))
})
