import { execFile } from 'node:child_process'
import { existsSync, readdirSync, rmSync } from 'node:fs'
import { promisify } from 'node:util'
import Fastify, { type FastifyInstance } from 'fastify'
import pg from 'pg'
import t from 'tap'
import { sql } from 'kysely'
import { connect, type Db } from '../../db/connect.js'
import { fromDatabaseError } from '../../db/errors.js'
import { serverOptions } from '../../plugins/server-options.js'
import tandem from '../../app/tandem.js'
import { ADMIN, TEST_SECRET } from '../helpers/app.js'
import { serverDatabase } from '../helpers/database.js'
import { freePort } from '../helpers/processes.js'
import { root } from '../helpers/root.js'

const run = promisify(execFile)

// Our own PostgreSQL server, never the shared one of DATABASE_URL: these tests stop and kill it.
// Its port is FAULT_PGPORT, or a free one, so that two runs at once do not stop each other's.
let PORT = Number(process.env.FAULT_PGPORT ?? 0)
const dataDir = () => `/tmp/tandem-pg-${PORT}`
const serverOptionsOf = () => `-h 127.0.0.1 -p ${PORT} -k /tmp -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 -c timezone=UTC`
/** Longer than any answer may take: the pool's connection timeout is 5 s. */
const HANG_MS = 15_000

const skip = process.env.DATABASE_URL === undefined || process.env.DATABASE_URL === ''
  ? 'fault tests need a real PostgreSQL: set DATABASE_URL (they start a server of their own with .ci/postgres.sh, on FAULT_PGPORT or a free port, and stop it)'
  : false

type Test = Parameters<Parameters<typeof t.test>[0]>[0]
type Json = Record<string, any>

function bindir (): string {
  if (existsSync('/usr/lib/postgresql/15/bin/pg_ctl')) return '/usr/lib/postgresql/15/bin'
  const version = readdirSync('/usr/lib/postgresql').sort((a, b) => Number(b) - Number(a))[0]
  return `/usr/lib/postgresql/${version ?? ''}/bin`
}

/** `pg_ctl` on our server's data directory, as the `postgres` user when we are root. */
async function pgCtl (...args: string[]): Promise<void> {
  const command = [`${bindir()}/pg_ctl`, '-D', dataDir(), '-w', '-t', '60', ...args]
  const [file, ...rest] = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--', ...command] : command
  await run(file as string, rest, { cwd: '/tmp' })
}
const stopServer = () => pgCtl('-m', 'fast', 'stop')
const startServer = () => pgCtl('-l', `/tmp/tandem-pg-${PORT}.log`, '-o', serverOptionsOf(), 'start')

let serverUrl = ''

/** A fresh database on our server, dropped when the test ends. */
const freshDatabase = (t: Test): Promise<string> => serverDatabase(t, serverUrl, 'tandem_fault')

/** A client of its own, outside the app's pool, to lock rows and kill backends with. */
async function outsider (t: Test, url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => {})
  await client.connect()
  t.teardown(() => client.end().catch(() => {}))
  return client
}

/** Tandem over `db`, listening on a real port. */
async function listening (t: Test, options: { db?: Db, databaseUrl?: string, databaseStatementTimeout?: number, databasePoolSize?: number }): Promise<{ app: FastifyInstance, base: string }> {
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  await app.register(tandem, { ...options, jwtSecret: TEST_SECRET, rootHandlers: true, adminEmail: ADMIN.email, adminPassword: ADMIN.password, rateLimitMax: 1_000_000 })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const address = app.server.address()
  return { app, base: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}` }
}

interface Answer { status: number, body: Json | null, ms: number }

/** One HTTP request over a real socket; a hang is an answer of status 0. */
async function call (base: string, path: string, init: { method?: string, headers?: Record<string, string>, body?: unknown } = {}): Promise<Answer> {
  const started = Date.now()
  try {
    const res = await fetch(base + path, {
      method: init.method ?? 'GET',
      headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
      signal: AbortSignal.timeout(HANG_MS)
    })
    const text = await res.text()
    return { status: res.status, body: text === '' ? null : JSON.parse(text) as Json, ms: Date.now() - started }
  } catch {
    return { status: 0, body: null, ms: Date.now() - started }
  }
}

async function until (check: () => Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

async function signIn (base: string): Promise<Record<string, string>> {
  const login = await call(base, '/api/v1/auth/login', { method: 'POST', body: { email: ADMIN.email, password: ADMIN.password } })
  return { authorization: `Bearer ${String(login.body?.accessToken)}` }
}

/** A product of 10 units whose row `locker`, a client outside the app, holds (`for update`) until it commits or rolls back. */
async function lockedProduct (t: Test, url: string, base: string, auth: Record<string, string>, name: string): Promise<{ id: number, locker: pg.Client }> {
  const product = await call(base, '/api/v1/products', { method: 'POST', headers: auth, body: { name, category: 'x', price: 1, stock: 10 } })
  const id = product.body?.id as number
  const locker = await outsider(t, url)
  await locker.query('begin')
  await locker.query('select id from products where id = $1 for update', [id])
  return { id, locker }
}

/** `POST /orders` of one unit of the product. */
const orderOne = async (base: string, auth: Record<string, string>, productId: number): Promise<Answer> =>
  await call(base, '/api/v1/orders', { method: 'POST', headers: auth, body: { items: [{ product_id: productId, quantity: 1 }] } })

t.before(async () => {
  if (skip !== false) return
  if (PORT === 0) PORT = await freePort()
  const { stdout } = await run('bash', ['.ci/postgres.sh', 'start'], { cwd: root, env: { ...process.env, PGPORT: String(PORT) } })
  serverUrl = stdout.trim().split('\n').pop() ?? ''
})

t.teardown(async () => {
  if (skip !== false) return
  await run('bash', ['.ci/postgres.sh', 'stop'], { cwd: root, env: { ...process.env, PGPORT: String(PORT) } })
  rmSync(`/tmp/tandem-pg-${PORT}.log`, { force: true })
})

t.test('PostgreSQL stopped under load: 503s fast, /ready 503, and everything recovers by itself', { skip }, async (t) => {
  const url = await freshDatabase(t)
  const { base } = await listening(t, { databaseUrl: url })
  const auth = await signIn(base)
  const answers: Array<Answer & { phase: string }> = []
  const created: number[] = []
  let phase = 'up'
  const load = { running: true }
  const worker = async (n: number) => {
    for (let i = 0; load.running; i++) {
      const write = (i + n) % 3 === 0
      const answer = write
        ? await call(base, '/api/v1/posts', { method: 'POST', headers: auth, body: { title: `load ${n}-${i}`, content: 'x' } })
        : await call(base, (i % 2 === 0) ? '/api/v1/products?limit=5' : '/api/v1/users?limit=5', { headers: auth })
      answers.push({ ...answer, phase })
      if (answer.status === 201) created.push(answer.body?.id as number)
    }
  }
  const workers = Array.from({ length: 6 }, (_, n) => worker(n))
  await until(async () => answers.filter((a) => a.status === 201).length >= 10, 'writes before the stop')

  phase = 'stopping'
  await stopServer()
  phase = 'down'
  await until(async () => (await call(base, '/ready')).status === 503, '/ready to say 503')
  const downFrom = answers.length
  await until(async () => answers.length - downFrom >= 30, 'answers while the server is down')
  const health = await call(base, '/health')
  t.equal(health.status, 200, '/health: the process lives on')
  const ready = await call(base, '/ready')
  t.equal(ready.status, 503)
  t.same(ready.body, { status: 'unavailable', error: 'database unavailable' })

  phase = 'restarting'
  await startServer()
  await until(async () => (await call(base, '/ready')).status === 200, '/ready to say 200 again')
  phase = 'recovered'
  const recoveredFrom = answers.length
  await until(async () => answers.slice(recoveredFrom).filter((a) => a.status === 201).length >= 10, 'writes after the restart')
  load.running = false
  await Promise.all(workers)

  const down = answers.filter((a) => a.phase === 'down')
  t.ok(down.length >= 30, `${down.length} answers while down`)
  t.same([...new Set(down.map((a) => a.status))], [503], 'every request while down is a 503')
  t.ok(down.every((a) => a.body?.error === 'database unavailable' && Object.keys(a.body).length === 1), 'in the contract\'s error shape')
  const slowest = Math.max(...down.map((a) => a.ms))
  t.comment(`while down: ${down.length} answers, slowest ${slowest} ms`)
  t.ok(answers.every((a) => a.status !== 0), 'no request hung or lost its socket')
  t.same([...new Set(answers.map((a) => a.status))].filter((s) => ![200, 201, 503].includes(s)), [], 'nothing but 200, 201 and 503 at any time')
  t.same(answers.filter((a) => a.phase === 'recovered').map((a) => a.status).filter((s) => s !== 200 && s !== 201), [], 'after the restart everything succeeds again')

  const check = await outsider(t, url)
  const { rows } = await check.query<{ id: string }>('select id from posts where id = any($1::bigint[])', [created])
  t.equal(rows.length, created.length, `all ${created.length} acknowledged writes are in the database`)
})

t.test('regression: a pooled client that lost its server inside a transaction crashed the process', { skip }, async (t) => {
  const url = await freshDatabase(t)
  const db = await connect({ databaseUrl: url, poolSize: 2 })
  t.teardown(() => db.destroy())
  const killer = await outsider(t, url)
  const failed = await db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx)
    await killer.query('select pg_terminate_backend($1)', [rows[0]?.pid])
    // The server's FATAL arrives while this client is checked out and idle: an 'error' event.
    await until(async () => (await killer.query('select count(*)::int as n from pg_stat_activity where pid = $1', [rows[0]?.pid])).rows[0].n === 0, 'the backend to end')
    await new Promise((resolve) => setTimeout(resolve, 200))
    await sql`select 1`.execute(trx)
  }).then(() => undefined, (error: unknown) => error)
  t.ok(fromDatabaseError(failed)?.statusCode === 503, 'the transaction fails as "database unavailable"')
  const { rows } = await sql<{ one: number }>`select 1 as one`.execute(db)
  t.same(rows, [{ one: 1 }], 'the process lives on and the pool hands out a working connection')
})

t.test('pool exhaustion waits a bounded time, then answers 503 rather than hanging', { skip }, async (t) => {
  const url = await freshDatabase(t)
  const db = await connect({ databaseUrl: url, poolSize: 2 })
  t.teardown(() => db.destroy())
  const { base } = await listening(t, { db })
  const auth = await signIn(base)
  const { id, locker } = await lockedProduct(t, url, base, auth, 'Scarce')

  // Both pooled connections block on the locked row inside their order transaction.
  const stuck = [1, 2].map(async () => await orderOne(base, auth, id))
  // Watched from another connection: inside a transaction pg_stat_activity is a snapshot.
  const watcher = await outsider(t, url)
  await until(async () => (await watcher.query("select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()")).rows[0].n === 2, 'both orders to wait on the lock')

  const starved = await call(base, '/api/v1/products')
  t.equal(starved.status, 503, 'a request that finds no free connection gets a 503')
  t.same(starved.body, { error: 'database unavailable' })
  t.comment(`answered after ${starved.ms} ms (the pool's connection timeout is 5000 ms)`)
  t.equal((await call(base, '/ready')).status, 503, '/ready says so too')

  await locker.query('commit')
  const placed = await Promise.all(stuck)
  t.same(placed.map((a) => a.status), [201, 201], 'the queued orders go through once the lock is gone')
  t.equal((await call(base, '/api/v1/products')).status, 200, 'and the pool serves again')
  const { rows } = await locker.query('select stock from products where id = $1', [id])
  t.equal(rows[0].stock, 8)
})

t.test('databaseStatementTimeout frees a connection held by a stuck statement, with a 503', { skip }, async (t) => {
  const url = await freshDatabase(t)
  const { base } = await listening(t, { databaseUrl: url, databaseStatementTimeout: 1000 })
  const auth = await signIn(base)
  const { id, locker } = await lockedProduct(t, url, base, auth, 'Locked')
  const order = await orderOne(base, auth, id)
  t.equal(order.status, 503, 'cancelled by statement_timeout')
  t.same(order.body, { error: 'database unavailable' })
  await locker.query('rollback')
  const { rows } = await locker.query('select (select count(*)::int from orders) as orders, (select stock from products where id = $1) as stock', [id])
  t.same(rows[0], { orders: 0, stock: 10 }, 'nothing of the cancelled order was written')
  t.equal((await orderOne(base, auth, id)).status, 201)
})

t.test('databasePoolSize bounds the connections: requests beyond it wait for one, then all succeed', { skip }, async (t) => {
  const url = await freshDatabase(t)
  const { base } = await listening(t, { databaseUrl: url, databasePoolSize: 2 })
  const auth = await signIn(base)
  const { id, locker } = await lockedProduct(t, url, base, auth, 'Queued')
  // Five orders of the locked product: each holds its connection while it waits on the lock.
  const orders = Array.from({ length: 5 }, async () => await orderOne(base, auth, id))
  const watcher = await outsider(t, url)
  const lockerPid = (await locker.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid
  const connections = async () => (await watcher.query<{ n: number }>(
    'select count(*)::int as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and pid <> $1',
    [lockerPid]
  )).rows[0]?.n ?? 0
  await until(async () => (await watcher.query("select 1 from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()")).rowCount === 2, 'two orders waiting on the lock')
  await new Promise((resolve) => setTimeout(resolve, 200))
  t.equal(await connections(), 2, 'two connections, not five')
  await locker.query('rollback')
  t.same((await Promise.all(orders)).map((o) => o.status), [201, 201, 201, 201, 201], 'the queued requests ran once a connection was free')
  const { rows } = await watcher.query('select stock from products where id = $1', [id])
  t.equal(rows[0].stock, 5)
})

t.test('a transaction killed midway leaves no half-written order', { skip }, async (t) => {
  const url = await freshDatabase(t)
  const { base } = await listening(t, { databaseUrl: url })
  const auth = await signIn(base)
  const make = async (name: string) => (await call(base, '/api/v1/products', { method: 'POST', headers: auth, body: { name, category: 'x', price: 2.5, stock: 10 } })).body?.id as number
  const first = await make('Taken first')
  const second = await make('Locked')
  const locker = await outsider(t, url)
  await locker.query('begin')
  await locker.query('select id from products where id = $1 for update', [second])

  // Lines are taken in product id order: the first one's stock is already decremented when the
  // order blocks on the second; then its backend is terminated.
  const pending = call(base, '/api/v1/orders', { method: 'POST', headers: auth, body: { items: [{ product_id: second, quantity: 3 }, { product_id: first, quantity: 2 }] } })
  const watcher = await outsider(t, url)
  let victim: number | undefined
  await until(async () => {
    const { rows } = await watcher.query<{ pid: number }>("select pid from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database() and query ilike 'update \"products\"%'")
    victim = rows[0]?.pid
    return victim !== undefined
  }, 'the order to wait on the locked product')
  const inside = await locker.query('select stock from products where id = $1', [first])
  t.equal(inside.rows[0].stock, 10, 'outside the transaction nothing is visible yet')
  await watcher.query('select pg_terminate_backend($1)', [victim])
  const answer = await pending
  t.equal(answer.status, 503, 'the killed order is a 503')
  t.same(answer.body, { error: 'database unavailable' })
  await locker.query('rollback')

  const { rows } = await locker.query('select (select count(*)::int from orders) as orders, (select count(*)::int from order_items) as items, (select stock from products where id = $1) as first, (select stock from products where id = $2) as second', [first, second])
  t.same(rows[0], { orders: 0, items: 0, first: 10, second: 10 }, 'no order, no item, and all the stock is back')
  const again = await call(base, '/api/v1/orders', { method: 'POST', headers: auth, body: { items: [{ product_id: second, quantity: 3 }, { product_id: first, quantity: 2 }] } })
  t.equal(again.status, 201, 'the pool replaced the dead connection: the next order goes through')
  t.equal(again.body?.total, 12.5)
})
