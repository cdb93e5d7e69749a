// Several machines on one (CONTRACT §13, issue 41, 5): a primary and its streaming replica
// (pg_basebackup), PgBouncer in transaction mode in front of the primary, Redis, and two real server
// processes behind nginx, all from Debian's packages and started by the test's own scripts
// (.ci/replica.sh, .ci/pgbouncer.sh, .ci/nginx.sh). Every check goes through nginx unless it names
// an instance.
import { execFile } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { existsSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { createClient } from 'graphql-ws'
import t from 'tap'
import WebSocket from 'ws'
import { freePort, runId, SERVER_SECRET, spawnServer, type Spawned } from '../helpers/processes.js'
import { databaseOf, onServer, replicaCommits, replicaPair, replicasSkip, until } from '../helpers/replicas.js'

const run = promisify(execFile)
const ci = (script: string) => fileURLToPath(new URL(`../../.ci/${script}`, import.meta.url))
const RATE_LIMIT_MAX = 200
const password = 'correct horse battery'

function skipReason (): string | false {
  const replicas = replicasSkip()
  if (replicas !== false) return replicas
  if (process.env.REDIS_URL_TEST === undefined || process.env.REDIS_URL_TEST === '') return 'needs REDIS_URL_TEST (a Redis the two instances share)'
  const missing = [['pgbouncer', '/usr/sbin/pgbouncer'], ['nginx', '/usr/sbin/nginx']].filter(([, path]) => !existsSync(path as string)).map(([name]) => name)
  return missing.length === 0 ? false : `needs Debian's ${missing.join(' and ')} (apt-get install ${missing.join(' ')}; .ci/run installs them)`
}

interface Answer { status: number, body: any, headers: Record<string, string | string[] | undefined> }

/** One request on a connection of its own, from `from` (a loopback address: a client of its own to nginx). */
async function call (base: string, method: string, path: string, options: { headers?: Record<string, string>, body?: unknown, from?: string } = {}): Promise<Answer> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body)
  return await new Promise((resolve, reject) => {
    const req = httpRequest(`${base}${path}`, {
      method,
      agent: false,
      localAddress: options.from ?? '127.0.0.1',
      headers: { ...payload === undefined ? {} : { 'content-type': 'application/json' }, ...options.headers }
    }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { text += chunk })
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) }) })
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(payload)
  })
}

interface Instance { port: number, url: string, process: Spawned }

t.test('two instances behind nginx, on a primary behind PgBouncer and its streaming replica, with Redis', { skip: skipReason() }, async (t) => {
  const pair = await replicaPair(t)
  const name = `tandem_e2e_${runId()}`
  await onServer(pair.primary, `create database ${name}`)
  const replicaUrl = databaseOf(pair.replica, name)
  const bouncerPort = await freePort()
  const primaryPort = new URL(pair.primary).port
  const bouncer = (await run(ci('pgbouncer.sh'), ['start', String(bouncerPort), primaryPort])).stdout.trim().split('\n').at(-1) as string
  t.teardown(() => run(ci('pgbouncer.sh'), ['stop', String(bouncerPort)]))
  const redisUrl = new URL(process.env.REDIS_URL_TEST as string)
  redisUrl.pathname = `/${randomInt(1, 16)}`
  const env = {
    JWT_SECRET: SERVER_SECRET,
    DATABASE_URL: databaseOf(bouncer, name),
    DATABASE_PREPARED_STATEMENTS: 'false',
    DATABASE_READ_URLS: replicaUrl,
    DATABASE_READ_MAX_LAG: '2s',
    REDIS_URL: redisUrl.toString(),
    TRUST_PROXY: '1',
    RATE_LIMIT_MAX: String(RATE_LIMIT_MAX),
    // Overload answers (503) are test/plugins/overload.test.ts's: on a busy machine they would fail a read here.
    OVERLOAD_MAX_EVENT_LOOP_DELAY: '0'
  }
  const start = async (port: number): Promise<Instance> => {
    const spawned = spawnServer(t, { ...env, PORT: String(port) })
    const url = `http://127.0.0.1:${port}`
    await until(async () => {
      if (spawned.child.exitCode !== null) throw new Error(`an instance exited at start: ${(await spawned.exited).stderr}`)
      return (await fetch(`${url}/health`).catch(() => undefined))?.status === 200
    }, 90_000, 'an instance to start')
    return { port, url, process: spawned }
  }
  // Both at once on the empty database, through PgBouncer: migrations and the demo data once (the
  // migrations take turns under a transaction-level lock, which PgBouncer keeps on one server connection).
  let [a, b] = await Promise.all([start(await freePort()), start(await freePort())]) as [Instance, Instance]
  const nginxPort = await freePort()
  const nginx = (await run(ci('nginx.sh'), ['start', String(nginxPort), String(a.port), String(b.port)])).stdout.trim().split('\n').at(-1) as string
  t.teardown(() => run(ci('nginx.sh'), ['stop', String(nginxPort)]))
  const replicaState = async (instance: Instance): Promise<string> => ((await call(instance.url, 'GET', '/ready')).body.pools as Array<{ pool: string, state: string }>).find(({ pool }) => pool === 'replica 1')?.state ?? ''
  await until(async () => await replicaState(a) === 'up' && await replicaState(b) === 'up', 30_000, 'the replica to be up on both instances')

  const newUser = async (label: string): Promise<{ id: number, headers: Record<string, string> }> => {
    const email = `${label}-${runId()}@example.com`
    const created = await call(nginx, 'POST', '/api/v1/users', { body: { name: label, email, password }, from: '127.0.0.9' })
    if (created.status !== 201) throw new Error(`sign-up failed: ${created.status}`)
    const login = await call(nginx, 'POST', '/api/v1/auth/login', { body: { email, password }, from: '127.0.0.9' })
    if (login.status !== 200) throw new Error(`login failed: ${login.status}`)
    return { id: created.body.id, headers: { authorization: `Bearer ${login.body.accessToken as string}` } }
  }
  const writer = await newUser('writer')
  const reader = await newUser('reader')

  t.test('reads through nginx reach the replica (its pg_stat_database counts them)', async (t) => {
    const before = await replicaCommits(pair.replica, name)
    for (let i = 0; i < 30; i++) t.equal((await call(nginx, 'GET', '/api/v1/posts?limit=5', { headers: reader.headers })).status, 200)
    await until(async () => await replicaCommits(pair.replica, name) - before >= 30, 10_000, 'the replica to count 30 reads')
  })

  t.test('read-your-writes with the replay paused, on either instance', async (t) => {
    await onServer(replicaUrl, 'select pg_wal_replay_pause()')
    t.teardown(() => onServer(replicaUrl, 'select pg_wal_replay_resume()'))
    for (const [writeOn, readOn] of [[nginx, nginx], [a.url, b.url], [b.url, a.url]] as const) {
      const created = await call(writeOn, 'POST', '/api/v1/posts', { headers: writer.headers, body: { title: `paused ${runId()}`, content: 'c' } })
      t.equal(created.status, 201)
      for (let i = 0; i < 4; i++) t.equal((await call(readOn, 'GET', `/api/v1/posts/${created.body.id as number}`, { headers: writer.headers })).status, 200, 'the writer reads the write')
    }
    // Past the maximum lag (2 s) the paused replica serves no one: another caller reads the primary.
    const late = await call(nginx, 'POST', '/api/v1/posts', { headers: writer.headers, body: { title: 'late', content: 'c' } })
    await until(async () => await replicaState(a) === 'lagging' && await replicaState(b) === 'lagging', 20_000, 'the replica to lag on both instances')
    for (let i = 0; i < 4; i++) t.equal((await call(nginx, 'GET', `/api/v1/posts/${late.body.id as number}`, { headers: reader.headers })).status, 200, 'another caller skips the lagging replica')
    await onServer(replicaUrl, 'select pg_wal_replay_resume()')
    await until(async () => await replicaState(a) === 'up' && await replicaState(b) === 'up', 20_000, 'the replica to catch up')
  })

  t.test('the replica stopped mid-run and started again', async (t) => {
    await pair.stopReplica()
    for (let i = 0; i < 10; i++) t.equal((await call(nginx, 'GET', '/api/v1/posts?limit=3', { headers: reader.headers })).status, 200)
    t.equal((await call(nginx, 'GET', '/ready')).status, 200)
    await pair.startReplica()
    await until(async () => await replicaState(a) === 'up' && await replicaState(b) === 'up', 60_000, 'the replica to be read again')
    const before = await replicaCommits(pair.replica, name)
    for (let i = 0; i < 10; i++) t.equal((await call(nginx, 'GET', '/api/v1/posts?limit=3', { headers: reader.headers })).status, 200)
    await until(async () => await replicaCommits(pair.replica, name) - before >= 10, 10_000, 'the replica to count the reads')
  })

  t.test('per-client rate limits count the address nginx puts in X-Forwarded-For', async (t) => {
    const statuses: number[] = []
    for (let i = 0; i < RATE_LIMIT_MAX; i++) statuses.push((await call(nginx, 'GET', '/api/v1/products?limit=1', { from: '127.0.0.2' })).status)
    t.same(new Set(statuses), new Set([200]))
    t.equal((await call(nginx, 'GET', '/api/v1/products?limit=1', { from: '127.0.0.2' })).status, 429, 'one quota across both instances')
    t.equal((await call(nginx, 'GET', '/api/v1/products?limit=1', { from: '127.0.0.3' })).status, 200, 'another client is not limited')
    // What a client writes itself into the header does not make it someone else.
    t.equal((await call(nginx, 'GET', '/api/v1/products?limit=1', { from: '127.0.0.2', headers: { 'x-forwarded-for': '10.9.9.9' } })).status, 429)
  })

  t.test('an Idempotency-Key retried on the other instance replays the first answer', async (t) => {
    const headers = { ...writer.headers, 'idempotency-key': `key-${runId()}` }
    const first = await call(a.url, 'POST', '/api/v1/posts', { headers, body: { title: 'once', content: 'c' } })
    t.equal(first.status, 201)
    const again = await call(b.url, 'POST', '/api/v1/posts', { headers, body: { title: 'once', content: 'c' } })
    t.equal(again.status, 201)
    t.same(again.body, first.body)
    t.equal(again.headers['idempotent-replayed'], 'true')
  })

  t.test('a subscription through nginx receives writes made through either instance', async (t) => {
    const client = createClient({ url: `${nginx.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: writer.headers })
    t.teardown(() => client.dispose())
    const titles = new Set<string>()
    client.subscribe<{ postCreated: { title: string } }>({ query: `subscription { postCreated(authorId: "${writer.id}") { title } }` }, {
      next: (value) => { if (value.data != null) titles.add(value.data.postCreated.title) },
      error: () => {},
      complete: () => {}
    })
    const round = runId()
    // The subscription is in place once its instance has taken it: write until both arrive.
    await until(async () => {
      for (const instance of [a, b]) await call(instance.url, 'POST', '/api/v1/posts', { headers: writer.headers, body: { title: `${round} ${instance.port}`, content: 'c' } })
      await new Promise((resolve) => setTimeout(resolve, 300))
      return titles.has(`${round} ${a.port}`) && titles.has(`${round} ${b.port}`)
    }, 20_000, 'the events of writes through both instances')
    t.pass('both arrived')
  })

  t.test('a rolling restart of one instance under a steady read load fails no request', async (t) => {
    const failures: string[] = []
    let answered = 0
    const loading = { on: true }
    const load = async (from: string): Promise<void> => {
      while (loading.on) {
        const answer = await call(nginx, 'GET', '/api/v1/products?limit=2', { from }).catch((error: Error) => ({ status: 0, body: error.message }))
        if (answer.status === 200) answered++
        else failures.push(`${answer.status}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    // Anonymous readers of addresses of their own (each within its rate limit), on the public products.
    const loads = ['127.0.0.4', '127.0.0.5'].map(load)
    try {
      await until(() => answered > 10, 10_000, 'the load to run')
      a.process.child.kill('SIGTERM')
      const exit = await a.process.exited
      t.equal(exit.code, 0, 'the instance closed gracefully')
      a = await start(a.port)
      await until(async () => await replicaState(a) === 'up', 30_000, 'the restarted instance to read the replica')
      const after = answered
      await until(() => answered > after + 10, 10_000, 'the load to go on')
    } finally {
      loading.on = false
      await Promise.all(loads)
    }
    t.same(failures, [], `no failed request of ${answered}`)
  })
})
