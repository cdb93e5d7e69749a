// Reads on a streaming replica (CONTRACT §13, issue 41): which reads go there, read-your-writes with
// the replay paused, a replica past the maximum lag, a replica stopped and started again. On a
// primary and a replica of the test's own (.ci/replica.sh), never on the shared server.
import { randomInt } from 'node:crypto'
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify'
import t from 'tap'
import tandem from '../../app/tandem.js'
import { serverOptions } from '../../plugins/server-options.js'
import type { TandemOptions } from '../../schema/options.js'
import { ADMIN, body, login, runId, signedIn, signUp, TEST_SECRET } from '../helpers/app.js'
import { databaseOf, onServer, replicaCommits, replicaPair, replicasSkip, until } from '../helpers/replicas.js'
import { connect, listening, subscribe } from '../helpers/subscriptions.js'

type Json = Record<string, any>
type Test = Parameters<Parameters<typeof t.test>[0]>[0]

interface Instance {
  app: FastifyInstance
  call: (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers?: Record<string, string>, payload?: object) => Promise<LightMyRequestResponse>
  graphql: (query: string, headers?: Record<string, string>) => Promise<Json>
  pools: () => Promise<Json[]>
}

/** Tandem in this process over `options` (its database, its replicas), closed when the test ends. */
async function instance (t: Test, options: TandemOptions): Promise<Instance> {
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  await app.register(tandem, { jwtSecret: TEST_SECRET, rootHandlers: true, overloadMaxEventLoopDelay: 0, rateLimitMax: 1_000_000, adminEmail: ADMIN.email, adminPassword: ADMIN.password, ...options })
  await app.ready()
  t.teardown(() => app.close())
  const call: Instance['call'] = (method, url, headers = {}, payload) => app.inject({ method, url: `/api/v1${url}`, headers, ...payload === undefined ? {} : { payload } })
  return {
    app,
    call,
    graphql: async (query, headers = {}) => body(await app.inject({ method: 'POST', url: '/graphql', headers, payload: { query } })),
    pools: async () => body<{ pools: Json[] }>(await app.inject({ url: '/ready' })).pools
  }
}

const replicaOf = async (one: Instance): Promise<Json> => (await one.pools()).find(({ pool }) => pool === 'replica 1') as Json

t.test('DATABASE_READ_URLS needs a PostgreSQL server as the primary', async (t) => {
  const app = Fastify({ logger: false })
  t.teardown(() => app.close())
  await t.rejects(async () => { await app.register(tandem, { jwtSecret: TEST_SECRET, databaseReadUrls: 'postgres://127.0.0.1:1/replica' }).ready() },
    { name: 'ConfigError', message: 'invalid configuration: databaseReadUrls needs a PostgreSQL server as the primary (databaseUrl)' })
})

// A write records its caller's WAL position in an HTTP hook (plugins/database.ts); a mutation over the
// subscriptions' WebSocket would record none. Mercurius runs only subscriptions there (no
// `fullWsTransport`): should that change, the position must be recorded there too.
t.test('a mutation over the WebSocket is refused and writes nothing: every write that records a position is HTTP', async (t) => {
  const { app, url } = await listening(t)
  const ann = await signedIn(app, { name: 'Ann' })
  const over = subscribe(connect(t, url, ann.headers), `mutation { createPost(input: { title: "over the socket", content: "c", authorId: "${ann.id}" }) { id } }`)
  t.match(await over.failed, [{ message: 'Invalid operation: mutation' }])
  t.same(await app.db.selectFrom('posts').select('title').where('title', '=', 'over the socket').execute(), [])
})

t.test('reads on a streaming replica', { skip: replicasSkip() }, async (t) => {
  const pair = await replicaPair(t)
  const name = `tandem_replica_${runId()}`
  await onServer(pair.primary, `create database ${name}`)
  const primaryUrl = databaseOf(pair.primary, name)
  const replicaUrl = databaseOf(pair.replica, name)
  // A maximum lag no test waits for: a caller who has not written reads the paused replica.
  const one = await instance(t, { databaseUrl: primaryUrl, databaseReadUrls: replicaUrl, databaseReadMaxLag: '60s' })
  await until(async () => (await replicaOf(one)).state === 'up', 20_000, 'the replica to be up')

  const writer = await signUp(one.app)
  const writerHeaders = await login(one.app, writer.email, writer.password)
  const reader = await signUp(one.app)
  const readerHeaders = await login(one.app, reader.email, reader.password)
  const created = await one.call('POST', '/posts', writerHeaders, { title: 'first', content: 'on the primary' })
  t.equal(created.statusCode, 201)
  const post = body(created).id as number

  t.test('regression: reads that are not part of a write reached the replica 0 times', async (t) => {
    // The replica has replayed the post once the writer (whose last write it is) may read there.
    await until(async () => { await one.call('GET', `/posts/${post}`, writerHeaders); return (await replicaOf(one)).reads > 0 }, 20_000, 'the post on the replica')
    const commits = await replicaCommits(pair.replica, name)
    const reads = (await replicaOf(one)).reads as number
    for (let i = 0; i < 20; i++) t.equal((await one.call('GET', '/posts?total=estimated', readerHeaders)).statusCode, 200)
    for (let i = 0; i < 10; i++) t.equal((await one.call('GET', `/posts/${post}?include=author,comments`, readerHeaders)).statusCode, 200)
    for (let i = 0; i < 10; i++) {
      const answer = await one.graphql(`{ post(id: "${post}") { title author { name } comments { text } } postsConnection(first: 5) { edges { node { id } } } }`, readerHeaders)
      t.equal(answer.data?.post?.title, 'first', JSON.stringify(answer.errors))
    }
    for (let i = 0; i < 10; i++) t.equal((await one.call('GET', '/products?limit=3')).statusCode, 200)
    t.ok((await replicaOf(one)).reads - reads >= 50, '/ready counts the replica\'s reads')
    // PostgreSQL's own statistics on the replica (flushed by its backends within about a second).
    await until(async () => await replicaCommits(pair.replica, name) - commits >= 50, 10_000, 'the replica\'s pg_stat_database to count 50 reads')
  })

  t.test('a caller who wrote reads that write while the replica\'s replay is paused; others read the replica', async (t) => {
    await onServer(replicaUrl, 'select pg_wal_replay_pause()')
    t.teardown(() => onServer(replicaUrl, 'select pg_wal_replay_resume()'))
    const written = await one.call('POST', '/posts', writerHeaders, { title: 'while paused', content: 'c' })
    t.equal(written.statusCode, 201)
    const id = body(written).id as number
    t.equal((await one.call('GET', `/posts/${id}`, writerHeaders)).statusCode, 200, 'the writer reads it (from the primary)')
    t.equal((await one.call('GET', `/posts/${id}`, readerHeaders)).statusCode, 404, 'another caller reads the replica, which has not replayed it')
    const changed = await one.call('PATCH', `/posts/${id}`, writerHeaders, { title: 'changed while paused' })
    t.equal(changed.statusCode, 200)
    t.equal(body(await one.call('GET', `/posts/${id}`, writerHeaders)).title, 'changed while paused')
    // GraphQL: a mutation, then a query of the same caller.
    const mutation = await one.graphql('mutation { createPost(input: { title: "by graphql", content: "c" }) { id } }', writerHeaders)
    const graphqlId = mutation.data?.createPost?.id as string
    t.ok(graphqlId !== undefined)
    t.equal((await one.graphql(`{ post(id: "${graphqlId}") { title } }`, writerHeaders)).data?.post?.title, 'by graphql')
    t.equal((await one.graphql(`{ post(id: "${graphqlId}") { title } }`, readerHeaders)).data?.post, null)
    await onServer(replicaUrl, 'select pg_wal_replay_resume()')
    await until(async () => (await one.call('GET', `/posts/${id}`, readerHeaders)).statusCode === 200, 20_000, 'the replica to replay the post')
  })

  t.test('regression: a signed-in caller re-reading a public resource they changed read the replica as anyone, and missed their write', async (t) => {
    const admin = await login(one.app, ADMIN.email, ADMIN.password)
    const created = await one.call('POST', '/products', admin, { name: 'before', category: 'replicas', price: 1, stock: 1 })
    t.equal(created.statusCode, 201)
    const id = body(created).id as number
    await until(async () => (await one.call('GET', `/products/${id}`)).statusCode === 200, 20_000, 'the replica to replay the product')
    await onServer(replicaUrl, 'select pg_wal_replay_pause()')
    t.teardown(() => onServer(replicaUrl, 'select pg_wal_replay_resume()'))
    t.equal((await one.call('PATCH', `/products/${id}`, admin, { name: 'after' })).statusCode, 200)
    t.equal(body(await one.call('GET', `/products/${id}`, admin)).name, 'after', 'GET /products/{id} with the token')
    t.same(body<{ data: Json[] }>(await one.call('GET', '/products?category=replicas', admin)).data.map((row: Json) => row.name), ['after'], 'GET /products with the token')
    t.equal((await one.graphql(`{ product(id: "${id}") { name } }`, admin)).data?.product?.name, 'after', 'GraphQL product(id) with the token')
    t.same((await one.graphql('{ products(category: "replicas") { name } }', admin)).data?.products, [{ name: 'after' }], 'GraphQL products with the token')
    t.equal(body(await one.call('GET', `/products/${id}`)).name, 'before', 'without a token: the paused replica, as before')
    t.equal(body(await one.call('GET', `/products/${id}`, { authorization: 'Bearer not-a-token' })).name, 'before', 'a token that is not one: read as nobody, as before')
  })

  t.test('a replica further behind than DATABASE_READ_MAX_LAG serves no one until it catches up', async (t) => {
    const strict = await instance(t, { databaseUrl: primaryUrl, databaseReadUrls: replicaUrl, databaseReadMaxLag: '1s' })
    await until(async () => (await replicaOf(strict)).state === 'up', 20_000, 'the replica to be up')
    await onServer(replicaUrl, 'select pg_wal_replay_pause()')
    t.teardown(() => onServer(replicaUrl, 'select pg_wal_replay_resume()'))
    const written = await strict.call('POST', '/posts', writerHeaders, { title: 'lagging', content: 'c' })
    const id = body(written).id as number
    await until(async () => (await replicaOf(strict)).state === 'lagging', 20_000, 'the replica to lag')
    const ready = await strict.app.inject({ url: '/ready' })
    t.equal(ready.statusCode, 200, 'a lagging replica leaves the instance ready')
    t.equal((await strict.call('GET', `/posts/${id}`, readerHeaders)).statusCode, 200, 'another caller reads the primary')
    const lag = (await replicaOf(strict)).lag_seconds as number
    t.ok(lag > 1, 'the lag is reported')
    await onServer(replicaUrl, 'select pg_wal_replay_resume()')
    await until(async () => (await replicaOf(strict)).state === 'up', 20_000, 'the replica to catch up')
  })

  t.test('a replica that stops is skipped within the request, and read again once it is back', async (t) => {
    await pair.stopReplica()
    for (let i = 0; i < 10; i++) {
      t.equal((await one.call('GET', '/posts', readerHeaders)).statusCode, 200)
      t.equal((await one.graphql('{ posts(limit: 2) { id } }', readerHeaders)).data?.posts?.length, 2)
    }
    const ready = await one.app.inject({ url: '/ready' })
    t.equal(ready.statusCode, 200)
    t.match(body(ready).pools, [{ pool: 'primary', state: 'up' }, { pool: 'replica 1', state: 'down' }])
    await pair.startReplica()
    await until(async () => (await replicaOf(one)).state === 'up', 40_000, 'the replica to be read again')
    const reads = (await replicaOf(one)).reads as number
    t.equal((await one.call('GET', '/posts', readerHeaders)).statusCode, 200)
    t.ok((await replicaOf(one)).reads > reads)
  })

  t.test('/metrics reports the reads of each pool and the replica\'s lag and state', async (t) => {
    const measured = await instance(t, { databaseUrl: primaryUrl, databaseReadUrls: replicaUrl, metrics: true })
    await until(async () => (await replicaOf(measured)).state === 'up', 20_000, 'the replica to be up')
    await measured.call('GET', '/posts', readerHeaders)
    const text = (await measured.app.inject({ url: '/metrics' })).body
    t.match(text, /^tandem_db_reads_total\{pool="replica 1"\} [1-9]/m)
    t.match(text, /^tandem_db_reads_total\{pool="primary"\} \d+/m)
    t.match(text, /^tandem_db_replica_lag_seconds\{pool="replica 1"\} \d/m)
    t.match(text, /^tandem_db_replica_state\{pool="replica 1",state="up"\} 1$/m)
  })

  t.test('two instances share where each caller\'s last write is through Redis', { skip: process.env.REDIS_URL_TEST === undefined || process.env.REDIS_URL_TEST === '' ? 'needs REDIS_URL_TEST (a Redis for the two instances)' : false }, async (t) => {
    const redisUrl = new URL(process.env.REDIS_URL_TEST as string)
    redisUrl.pathname = `/${randomInt(1, 16)}`
    const options = { databaseUrl: primaryUrl, databaseReadUrls: replicaUrl, databaseReadMaxLag: '60s', redisUrl: redisUrl.toString() }
    const [a, b] = [await instance(t, options), await instance(t, options)]
    await until(async () => (await replicaOf(a)).state === 'up' && (await replicaOf(b)).state === 'up', 20_000, 'the replica to be up')
    await onServer(replicaUrl, 'select pg_wal_replay_pause()')
    t.teardown(() => onServer(replicaUrl, 'select pg_wal_replay_resume()'))
    const written = await a.call('POST', '/posts', writerHeaders, { title: 'on a', content: 'c' })
    const id = body(written).id as number
    t.equal((await b.call('GET', `/posts/${id}`, writerHeaders)).statusCode, 200, 'the writer reads it on the other instance')
    t.equal((await b.call('GET', `/posts/${id}`, readerHeaders)).statusCode, 404, 'others read the replica')
  })
})
