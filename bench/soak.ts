/**
 * `npm run soak [-- --seconds 60 --connections 16]`: mixed reads and writes against the real server
 * entry point on a real PostgreSQL, with autocannon; reports every answer that is neither 2xx nor
 * 429 (must be none) and the server's RSS over the run (must not keep growing).
 *
 * PostgreSQL: a fresh database on `DATABASE_URL` (dropped at the end), or else a server of its own
 * started with .ci/postgres.sh on SOAK_PGPORT (default: a free port) and stopped at the end.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import autocannon, { type Request } from 'autocannon'
import pg from 'pg'
import { serverNodeFlags } from './servers.js'

const run = promisify(execFile)
const root = fileURLToPath(new URL('..', import.meta.url))
const ADMIN = { email: 'soak-admin@example.com', password: 'soak-admin-password' }
const RSS_EVERY_MS = 5_000

const { values: args } = parseArgs({ options: { seconds: { type: 'string', default: '60' }, connections: { type: 'string', default: '16' } } })
const seconds = Number(args.seconds)
const connections = Number(args.connections)

async function freePort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  server.close()
  return typeof address === 'object' && address !== null ? address.port : 0
}

async function admin (url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try { await client.query(statement) } finally { await client.end() }
}

/** A database for the run, and how to get rid of it. */
async function database (): Promise<{ url: string, origin: string, release: () => Promise<void> }> {
  const name = `tandem_soak_${randomBytes(4).toString('hex')}`
  const shared = process.env.DATABASE_URL
  if (shared !== undefined && shared !== '') {
    await admin(shared, `create database ${name}`)
    const url = new URL(shared)
    url.pathname = '/' + name
    return { url: url.toString(), origin: 'DATABASE_URL', release: async () => { await admin(shared, `drop database if exists ${name} with (force)`) } }
  }
  const port = String(process.env.SOAK_PGPORT ?? await freePort())
  const env = { ...process.env, PGPORT: port }
  const { stdout } = await run('bash', ['.ci/postgres.sh', 'start'], { cwd: root, env })
  const server = stdout.trim().split('\n').pop() ?? ''
  const release = async () => {
    await run('bash', ['.ci/postgres.sh', 'stop'], { cwd: root, env })
    rmSync(`/tmp/tandem-pg-${port}.log`, { force: true })
  }
  return { url: server, origin: `own server on port ${port}`, release }
}

/** The real entry point, in production mode, as one Node process (its RSS is what we watch). */
async function startApi (databaseUrl: string): Promise<{ child: ChildProcess, origin: string }> {
  const port = await freePort()
  const child = spawn(process.execPath, [...serverNodeFlags(), '--import', 'tsx', 'server.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      TZ: 'UTC',
      NODE_ENV: 'production',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: databaseUrl,
      JWT_SECRET: randomBytes(24).toString('base64url'),
      LOG_LEVEL: 'warn',
      RATE_LIMIT_MAX: '100000000',
      ADMIN_EMAIL: ADMIN.email,
      ADMIN_PASSWORD: ADMIN.password
    },
    stdio: ['ignore', 'inherit', 'inherit']
  })
  const origin = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 120_000
  while (!await fetch(origin + '/ready').then((r) => r.ok, () => false)) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error('the API did not start')
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return { child, origin }
}

const rssMiB = (pid: number): number => {
  const kib = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return Math.round(Number(kib) / 1024 * 10) / 10
}

async function json (origin: string, path: string, init: { method?: string, token?: string, body?: unknown } = {}): Promise<any> {
  const res = await fetch(origin + path, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', ...(init.token === undefined ? {} : { authorization: `Bearer ${init.token}` }) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
  })
  if (!res.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${res.status} ${await res.text()}`)
  return res.json()
}

/** Tokens for `count` users and the ids of products with stock that a soak cannot run out of. */
async function prepare (origin: string, count: number): Promise<{ tokens: string[], products: number[] }> {
  const adminToken = (await json(origin, '/api/v1/auth/login', { method: 'POST', body: ADMIN })).accessToken as string
  const products: number[] = []
  for (let i = 0; i < 20; i++) {
    const product = await json(origin, '/api/v1/products', { method: 'POST', token: adminToken, body: { name: `Soak ${i}`, category: 'soak', price: 1 + i, stock: 2_000_000_000 } })
    products.push(product.id as number)
  }
  const tokens: string[] = []
  for (let i = 0; i < count; i++) {
    const user = { name: `Soak User ${i}`, email: `soak${i}@example.com`, password: 'soak-user-password' }
    await json(origin, '/api/v1/users', { method: 'POST', body: user })
    tokens.push((await json(origin, '/api/v1/auth/login', { method: 'POST', body: { email: user.email, password: user.password } })).accessToken as string)
  }
  return { tokens, products }
}

interface Context { token?: string, userId?: number, postId?: number, orderId?: number, n?: number }

/** One connection's loop: reads, a post and a comment, an order read and cancelled, GraphQL. */
function workload (tokens: string[], products: number[]): Request[] {
  let next = 0
  const pick = () => products[Math.floor(Math.random() * products.length)] as number
  const as = (context: object) => context as Context
  const authed = (request: Request, context: object, extra: Partial<Request> = {}): Request => {
    const c = as(context)
    c.token ??= tokens[next++ % tokens.length]
    c.n = (c.n ?? 0) + 1
    const body = extra.body ?? request.body
    const type = body === undefined ? {} : { 'content-type': 'application/json' }
    return { ...request, ...extra, headers: { ...request.headers, ...type, authorization: `Bearer ${c.token ?? ''}` } }
  }
  const remember = (key: 'postId' | 'orderId') => (status: number, body: string, context: object) => {
    if (status === 201) as(context)[key] = JSON.parse(body).id as number
  }
  return [
    { method: 'GET', path: '/api/v1/products?limit=20&sort=-price' },
    { method: 'GET', path: '/api/v1/posts?limit=10&sort=-created_at', setupRequest: (r, c) => authed(r, c) },
    { method: 'POST', path: '/api/v1/posts', setupRequest: (r, c) => authed(r, c, { body: JSON.stringify({ title: `Soak ${as(c).n ?? 0}`, content: 'Mixed reads and writes.' }) }), onResponse: remember('postId') },
    { method: 'POST', setupRequest: (r, c) => authed(r, c, { path: `/api/v1/posts/${as(c).postId ?? 0}/comments`, body: JSON.stringify({ text: 'A comment.' }) }) },
    { method: 'GET', setupRequest: (r, c) => authed(r, c, { path: `/api/v1/posts/${as(c).postId ?? 0}?include=author,comments` }) },
    { method: 'POST', path: '/api/v1/orders', setupRequest: (r, c) => authed(r, c, { body: JSON.stringify({ items: [...new Set([pick(), pick()])].map((id) => ({ product_id: id, quantity: 1 })) }) }), onResponse: remember('orderId') },
    { method: 'GET', setupRequest: (r, c) => authed(r, c, { path: `/api/v1/orders/${as(c).orderId ?? 0}` }) },
    { method: 'POST', setupRequest: (r, c) => authed(r, c, { path: `/api/v1/orders/${as(c).orderId ?? 0}/cancel` }) },
    { method: 'POST', path: '/graphql', setupRequest: (r, c) => authed(r, c, { body: JSON.stringify({ query: '{ users(limit: 10) { name posts(limit: 3) { title comments(limit: 3) { text } } } }' }) }) },
    { method: 'GET', path: '/api/v1/users?limit=20&q=soak', setupRequest: (r, c) => authed(r, c) }
  ]
}

/** Least-squares slope of RSS over time, in MiB per minute. */
function slope (samples: Array<{ s: number, mib: number }>): number {
  const n = samples.length
  if (n < 2) return 0
  const mx = samples.reduce((a, p) => a + p.s, 0) / n
  const my = samples.reduce((a, p) => a + p.mib, 0) / n
  const num = samples.reduce((a, p) => a + (p.s - mx) * (p.mib - my), 0)
  const den = samples.reduce((a, p) => a + (p.s - mx) ** 2, 0)
  return den === 0 ? 0 : num / den * 60
}

const db = await database()
let api: Awaited<ReturnType<typeof startApi>> | undefined
let failed = false
try {
  api = await startApi(db.url)
  const pid = api.child.pid ?? 0
  const { tokens, products } = await prepare(api.origin, connections)
  const startRss = rssMiB(pid)
  const samples: Array<{ s: number, mib: number }> = []
  const started = Date.now()
  const sampler = setInterval(() => { samples.push({ s: (Date.now() - started) / 1000, mib: rssMiB(pid) }) }, RSS_EVERY_MS)
  const result = await autocannon({ url: api.origin, connections, duration: seconds, requests: workload(tokens, products) })
  clearInterval(sampler)
  const endRss = rssMiB(pid)

  const statuses = Object.fromEntries(Object.entries(result.statusCodeStats ?? {}).map(([code, stat]) => [code, stat.count ?? 0]))
  const bad = Object.entries(statuses).filter(([code]) => !code.startsWith('2') && code !== '429').reduce((a, [, count]) => a + count, 0)
  const errors = bad + result.errors + result.timeouts
  const settled = samples.filter((p) => p.s >= seconds / 3)
  failed = errors > 0
  console.log(JSON.stringify({
    database: db.origin,
    seconds,
    connections,
    requests: result.requests.total,
    throughput: `${Math.round(result.requests.average)} req/s`,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
    statuses,
    errorsNon429: errors,
    socketErrors: result.errors,
    timeouts: result.timeouts,
    rssMiB: { start: startRss, end: endRss, max: Math.max(startRss, ...samples.map((p) => p.mib)), samples: samples.map((p) => p.mib) },
    rssSlopeAfterWarmupMiBPerMin: Math.round(slope(settled) * 10) / 10
  }, null, 2))
  console.log(failed ? `FAIL: ${errors} answers were errors other than 429` : 'OK: no errors other than 429')
} catch (error) {
  failed = true
  console.error(error)
} finally {
  if (api !== undefined) {
    api.child.kill('SIGTERM')
    await once(api.child, 'exit')
  }
  await db.release()
}
process.exitCode = failed ? 1 : 0
