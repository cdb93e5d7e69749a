// `npm run attack`: the hostile clients of CONTRACT §10 (issue 27), one at a time, against a real
// server, next to a well-behaved client. For each: that client's latency without and with the
// attack, the server's memory, and what the attacker got. Nothing is asserted: the tests do that
// (test/graphql/limits.test.ts, test/plugins/server-options.test.ts, …); this shows the cost.
//
//   npm run attack                    # every attack, embedded database in a temporary directory
//   npm run attack -- --only slow-bodies,big-bodies --seconds 5
//   DATABASE_URL=postgres://… npm run attack
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect as connectTcp } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { createClient } from 'graphql-ws'
import WebSocket from 'ws'
import { apiEntryPoint, startApi } from './servers.js'
import { watchRss } from './system.js'

const { values: args } = parseArgs({
  options: { only: { type: 'string' }, seconds: { type: 'string', default: '10' }, 'no-build': { type: 'boolean', default: false } }
})
const seconds = Number(args.seconds)
const ADMIN = { email: 'attack-admin@example.com', password: 'attack-admin-password' }

interface Context { origin: string, ws: string, token: () => Promise<string> }
interface Attack { id: string, what: string, run: (c: Context, until: number) => Promise<string> }

const sleep = async (ms: number) => { await new Promise((resolve) => setTimeout(resolve, ms)) }
const tally = (counts: Map<string, number>, key: string) => counts.set(key, (counts.get(key) ?? 0) + 1)
const summary = (counts: Map<string, number>) => [...counts].map(([k, n]) => `${n}× ${k}`).join(', ')
const failure = (e: Error & { cause?: { code?: string } }) => e.cause?.code ?? e.message
const outcome = async (p: Promise<Response>) => p.then((r) => String(r.status), failure)
const post = (url: string, body: string | Buffer) => fetch(url, { method: 'POST', headers: { ...from(), 'content-type': 'application/json' }, body })

// The server trusts the loopback proxy (TRUST_PROXY): each attack comes from an address of its own
// (`x-forwarded-for`), so that one attack's spent rate limit does not spoil the next.
let address = '198.18.0.1'
/** `x-forwarded-for` of the current attack. */
const from = (): Record<string, string> => ({ 'x-forwarded-for': address })

async function json (origin: string, path: string, init: { method?: string, body?: unknown, token?: string } = {}): Promise<any> {
  const res = await fetch(origin + path, {
    method: init.method ?? 'GET',
    headers: { ...from(), ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...(init.token === undefined ? {} : { authorization: `Bearer ${init.token}` }) },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
  })
  return res.status === 204 ? null : res.json()
}

let users = 0
/** A new user and a token of theirs. */
async function newUser (origin: string): Promise<{ id: number, email: string, password: string, token: string }> {
  const user = { name: `Attack ${++users}`, email: `attack${users}-${Date.now()}@example.com`, password: 'attack-user-password' }
  const { id } = await json(origin, '/api/v1/users', { method: 'POST', body: user })
  const { accessToken } = await json(origin, '/api/v1/auth/login', { method: 'POST', body: { email: user.email, password: user.password } })
  return { ...user, id, token: accessToken }
}

/** Runs `request` from `workers` loops until `until`, tallying what each got. */
async function flood (workers: number, until: number, request: () => Promise<string>, pauseMs = 0): Promise<string> {
  const counts = new Map<string, number>()
  await Promise.all(Array.from({ length: workers }, async () => {
    while (Date.now() < until) {
      tally(counts, await request())
      if (pauseMs > 0) await sleep(pauseMs)
    }
  }))
  return summary(counts)
}

const attacks: Attack[] = [
  {
    id: 'graphql-comments',
    what: 'anonymous `{ __typename } #<1 MiB comment>` from 4 loops',
    run: async ({ origin }, until) => {
      const body = JSON.stringify({ query: `{ __typename } #${'x'.repeat(1 << 20)}` })
      return flood(4, until, async () => outcome(post(`${origin}/graphql`, body)))
    }
  },
  {
    id: 'graphql-validation',
    what: 'two anonymous clients, each 4 documents a second of 1,200 repeated `users { id }` (each new to the caches)',
    run: async ({ origin }, until) => {
      let n = 0
      return flood(2, until, async () => {
        const res = await post(`${origin}/graphql`, JSON.stringify({ query: `{ ${'users { id } '.repeat(1200)}} #${++n}` })).catch(failure)
        if (typeof res === 'string') return res
        return String((await res.json() as { errors?: Array<{ extensions?: { code?: string } }> }).errors?.[0]?.extensions?.code ?? res.status)
      }, 250)
    }
  },
  {
    id: 'graphql-variables',
    what: 'one anonymous client sends 12 `createUser` mutations whose input variable has 40,000 unknown fields (~430 KiB), 2 s apart (graphql-jit compiles the document on the 11th); another client asks `/health` every 100 ms',
    run: async ({ origin }) => {
      const fields = Object.fromEntries(Array.from({ length: 40_000 }, (_, i) => [`f${i}`, 1]))
      const body = JSON.stringify({ query: 'mutation ($i: CreateUserInput!) { createUser(input: $i) { id } }', variables: { i: { name: 'n', email: 'bomb@example.com', ...fields } } })
      // The other client, from an address of its own: the slowest /health it waited for.
      const bombs = { sent: false }
      let slowestHealth = 0
      let polls = 0
      const health = (async () => {
        while (!bombs.sent) {
          const started = performance.now()
          await fetch(`${origin}/health`, { headers: { 'x-forwarded-for': '198.18.250.1' } }).then(async (r) => await r.arrayBuffer()).catch(() => {})
          slowestHealth = Math.max(slowestHealth, performance.now() - started)
          polls++
          await sleep(100)
        }
      })()
      const codes = new Map<string, number>()
      let slowest = 0
      let largest = 0
      for (let i = 0; i < 12; i++) {
        const started = performance.now()
        const res = await post(`${origin}/graphql`, body).catch(failure)
        if (typeof res === 'string') {
          tally(codes, res)
        } else {
          const text = await res.text()
          largest = Math.max(largest, text.length)
          const errors = (JSON.parse(text) as { errors?: Array<{ extensions?: { code?: string } }> }).errors ?? []
          tally(codes, `${res.status} with ${errors.length} ${errors[0]?.extensions?.code ?? 'no error'}`)
        }
        const took = performance.now() - started
        slowest = Math.max(slowest, took)
        await sleep(Math.max(0, 2000 - took))
      }
      bombs.sent = true
      await health
      return `${summary(codes)}; each answered in ≤ ${ms(slowest)}, ≤ ${(largest / 1024).toFixed(1)} KiB; the other client's /health: slowest ${ms(slowestHealth)} of ${polls}`
    }
  },
  {
    id: 'ws-subscriptions',
    what: 'one user opens 1,000 subscriptions, 1,000 on one socket and 50 (the most allowed) on each of 20 more; someone else then posts 3 times',
    run: async ({ origin, ws, token }, until) => {
      const headers = from()
      const authorization = `Bearer ${await token()}`
      const results = new Map<string, number>()
      const clients = Array.from({ length: 21 }, () => createClient({ url: ws, webSocketImpl: class extends WebSocket { constructor (url: string, protocols?: string | string[]) { super(url, protocols, { headers }) } }, connectionParams: { authorization }, retryAttempts: 0, lazy: false }))
      for (const [at, client] of clients.entries()) {
        for (let i = 0; i < (at === 0 ? 1000 : 50); i++) {
          client.subscribe({ query: 'subscription { postCreated { id title author { name } } }' }, {
            next: () => tally(results, 'event'),
            error: (e) => tally(results, `error ${(e as Array<{ extensions?: { code?: string } }>)[0]?.extensions?.code ?? 'closed'}`),
            complete: () => {}
          })
        }
      }
      await sleep(1000)
      const poster = await newUser(origin)
      for (let i = 0; i < 3; i++) await json(origin, '/api/v1/posts', { method: 'POST', token: poster.token, body: { title: `attack ${i}`, content: 'x' } })
      await sleep(Math.max(0, until - Date.now()))
      await Promise.all(clients.map(async (client) => client.dispose()))
      return summary(results)
    }
  },
  {
    id: 'ws-huge-subscribe',
    what: 'a 1 MiB `subscribe` over WebSocket, once a second',
    run: async ({ ws, token }, until) => {
      const counts = new Map<string, number>()
      const socket = new WebSocket(ws, 'graphql-transport-ws', { headers: from() })
      socket.on('message', (data) => { tally(counts, String(JSON.parse(String(data)).type)) })
      await new Promise((resolve) => socket.once('open', resolve))
      socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${await token()}` } }))
      for (let i = 0; Date.now() < until; i++) {
        socket.send(JSON.stringify({ type: 'subscribe', id: String(i), payload: { query: `subscription { postCreated { id } } #${'x'.repeat(1 << 20)}` } }))
        await sleep(1000)
      }
      socket.close()
      return summary(counts)
    }
  },
  {
    id: 'silent-sockets',
    what: '200 WebSockets that never send `connection_init`',
    run: async ({ ws }, until) => {
      const sockets = Array.from({ length: 200 }, () => new WebSocket(ws, 'graphql-transport-ws', { headers: from() }))
      const closed = new Map<string, number>()
      for (const socket of sockets) socket.on('close', (code) => tally(closed, `closed ${code}`)).on('error', () => {})
      await sleep(Math.max(12_000, until - Date.now()))
      const open = sockets.filter((s) => s.readyState === WebSocket.OPEN).length
      for (const socket of sockets) socket.terminate()
      return `${open} still open after ${Math.max(12, seconds)} s; ${summary(closed)}`
    }
  },
  {
    id: 'slow-bodies',
    what: '20 POSTs that send a byte of their body every 10 s',
    run: async ({ origin }, until) => {
      const url = new URL(origin)
      const answers = new Map<string, number>()
      const sockets = Array.from({ length: 20 }, () => {
        const socket = connectTcp(Number(url.port), url.hostname)
        socket.on('data', (chunk) => tally(answers, String(chunk).split('\r\n')[0] ?? '')).on('error', () => {})
        socket.write(`POST /api/v1/users HTTP/1.1\r\nhost: x\r\nx-forwarded-for: ${address}\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{`)
        return socket
      })
      const end = Math.max(until, Date.now() + 35_000)
      while (Date.now() < end) {
        await sleep(10_000)
        for (const socket of sockets) if (!socket.destroyed) socket.write(' ')
      }
      const open = sockets.filter((s) => !s.destroyed && !s.readableEnded).length
      for (const socket of sockets) socket.destroy()
      return `${open} of 20 still open after ${Math.round((end - until) / 1000) + seconds} s; answers: ${summary(answers) || 'none'}`
    }
  },
  {
    id: 'apq-flood',
    what: 'anonymous automatic persisted queries of ~1 MiB each',
    run: async ({ origin }, until) => {
      let n = 0
      return flood(2, until, async () => {
        const query = `{ __typename } #${++n} ${'x'.repeat(1 << 20)}`
        const sha256Hash = createHash('sha256').update(query).digest('hex')
        const res = await post(`${origin}/graphql`, JSON.stringify({ query, extensions: { persistedQuery: { version: 1, sha256Hash } } })).catch(failure)
        if (typeof res === 'string') return res
        return res.status === 200 ? String((await res.json() as { errors?: Array<{ extensions?: { code?: string } }> }).errors?.[0]?.extensions?.code ?? 'learnt') : String(res.status)
      })
    }
  },
  {
    id: 'big-bodies',
    what: '2 MiB JSON bodies to POST /api/v1/users from 4 loops',
    run: async ({ origin }, until) => {
      const body = Buffer.alloc(2 << 20, 97)
      return flood(4, until, async () => outcome(post(`${origin}/api/v1/users`, body)))
    }
  },
  {
    id: 'search-scan',
    what: '`GET /posts?q=zq&total=true` from 4 loops',
    run: async ({ origin, token }, until) => {
      const auth = { ...from(), authorization: `Bearer ${await token()}` }
      return flood(4, until, async () => outcome(fetch(`${origin}/api/v1/posts?q=zq&total=true`, { headers: auth })))
    }
  },
  {
    id: 'revoked-token',
    what: '1,000 requests with a logged-out token, then the owner signs in again',
    run: async ({ origin }) => {
      const owner = await newUser(origin)
      await json(origin, '/api/v1/auth/logout', { method: 'POST', token: owner.token })
      const counts = new Map<string, number>()
      for (let i = 0; i < 1000; i++) tally(counts, await outcome(fetch(`${origin}/api/v1/users?limit=1`, { headers: { ...from(), authorization: `Bearer ${owner.token}` } })))
      address = '198.18.255.254' // the owner signs in again from elsewhere
      const { accessToken } = await json(origin, '/api/v1/auth/login', { method: 'POST', body: { email: owner.email, password: owner.password } })
      const fresh = await outcome(fetch(`${origin}/api/v1/users?limit=1`, { headers: { ...from(), authorization: `Bearer ${accessToken as string}` } }))
      return `thief: ${summary(counts)}; the owner's new session: ${fresh}`
    }
  }
]

/** The well-behaved client: one signed-in reader, a list page every 50 ms, its latencies. */
async function wellBehaved (origin: string, token: string, until: number): Promise<number[]> {
  const latencies: number[] = []
  while (Date.now() < until) {
    const started = performance.now()
    await fetch(`${origin}/api/v1/users?limit=20`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => await r.arrayBuffer())
    latencies.push(performance.now() - started)
    await sleep(50)
  }
  return latencies
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted.length === 0 ? NaN : (sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] as number)
}
const ms = (value: number) => `${value.toFixed(value < 10 ? 1 : 0)} ms`

async function main (): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'tandem-attack-'))
  const env: Record<string, string> = {
    JWT_SECRET: 'attack-secret-of-at-least-32-characters',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    LOG_LEVEL: 'warn',
    TRUST_PROXY: '127.0.0.1',
    ...(process.env.DATABASE_URL === undefined ? { DATA_DIR: dataDir } : { DATABASE_URL: process.env.DATABASE_URL })
  }
  const entry = await apiEntryPoint(!args['no-build'], (line) => { console.log(`[attack] ${line}`) })
  const server = await startApi(entry, env, join(dataDir, 'api.log'))
  const origin = server.origin
  const context: Context = { origin, ws: origin.replace('http', 'ws') + '/graphql', token: async () => (await newUser(origin)).token }
  const reader = await newUser(origin)
  const chosen = args.only === undefined ? attacks : attacks.filter((a) => args.only?.split(',').includes(a.id))
  console.log(`[attack] ${server.command} at ${origin}; ${seconds} s per phase\n`)
  console.log('| attack | client p50 / p99 without | with | server RSS MiB: before → peak (after) | what the attacker got |')
  console.log('|---|---|---|---|---|')
  try {
    for (const [index, attack] of chosen.entries()) {
      address = `198.18.${index + 1}.1`
      const calm = await wellBehaved(origin, reader.token, Date.now() + seconds * 1000)
      const rss = watchRss(server.pid)
      const before = rss.stop().peakMiB
      const watch = watchRss(server.pid)
      const until = Date.now() + seconds * 1000
      const [under, got] = await Promise.all([wellBehaved(origin, reader.token, until), attack.run(context, until).catch((e: Error) => `failed: ${e.message}`)])
      await sleep(2000)
      const after = watchRss(server.pid).stop().peakMiB
      const peak = watch.stop().peakMiB
      console.log(`| ${attack.id}: ${attack.what} | ${ms(percentile(calm, 0.5))} / ${ms(percentile(calm, 0.99))} | ${ms(percentile(under, 0.5))} / ${ms(percentile(under, 0.99))} | ${before ?? '–'} → ${peak ?? '–'} (${after ?? '–'}) | ${got} |`)
    }
  } finally {
    await server.stop()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
