// The HTTP server's own defences (CONTRACT §10): client addresses behind a proxy, slow requests,
// oversized bodies.
import { connect } from 'node:net'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import t from 'tap'
import { configFromEnv, ConfigError } from '../../plugins/config.js'
import { logFormat, serverOptions, trustProxyOption } from '../../plugins/server-options.js'
import { LOGIN_LIMITS } from '../../plugins/rate-limit.js'
import tandem from '../../app/tandem.js'
import { TEST_SECRET, testDb } from '../helpers/app.js'
import { startServer } from '../helpers/processes.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

/** Tandem listening on a free port with the server options of `settings`; its origin. */
async function listening (t: Test, settings: { requestTimeout?: number, trustProxy?: string, rateLimitMax?: number } = {}): Promise<string> {
  const app = Fastify(serverOptions({ logLevel: 'silent', ...settings }))
  // No overload answers (503) on a busy machine, as in `build` (test/helpers/app.ts).
  await app.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET, rootHandlers: true, overloadMaxEventLoopDelay: 0, ...settings })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
}

t.test('TRUST_PROXY: client addresses come from X-Forwarded-For only when the proxy is trusted', async (t) => {
  t.equal(trustProxyOption(undefined), false)
  t.throws(() => trustProxyOption('true'), ConfigError, 'every hop trusted: refused, for a host\'s own setting too')
  t.throws(() => trustProxyOption('0.0.0.0/0'), ConfigError)
  t.equal(trustProxyOption('10.0.0.0/8 , 127.0.0.1'), '10.0.0.0/8,127.0.0.1')
  const hops = trustProxyOption('1')
  t.ok(typeof hops === 'function' && hops('127.0.0.1', 0) && !hops('127.0.0.1', 1), 'a hop count trusts that many proxies')

  for (const [trustProxy, expected] of [[undefined, '127.0.0.1'], ['127.0.0.1', '203.0.113.5'], ['1', '203.0.113.5'], ['10.9.9.9', '127.0.0.1']] as const) {
    const probe = Fastify(serverOptions({ logLevel: 'silent', ...(trustProxy === undefined ? {} : { trustProxy }) }))
    probe.get('/ip', async (request) => ({ ip: request.ip }))
    t.teardown(() => probe.close())
    const res = await probe.inject({ url: '/ip', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': '203.0.113.5' } })
    t.equal(res.json().ip, expected, `trustProxy ${String(trustProxy)}`)
  }
})

t.test('regression: behind a proxy, everyone shared its rate limit; with TRUST_PROXY each client has their own', async (t) => {
  const origin = await listening(t, { trustProxy: '127.0.0.1', rateLimitMax: 2 })
  const get = (client: string) => fetch(`${origin}/api/v1/products`, { headers: { 'x-forwarded-for': client } }).then((r) => r.status)
  t.same([await get('203.0.113.1'), await get('203.0.113.1'), await get('203.0.113.1')], [200, 200, 429], 'one client behind the proxy reaches its limit')
  t.equal(await get('203.0.113.2'), 200, 'another client behind the same proxy does not share it')
})

// Issue 37, finding 6: with TRUST_PROXY=true the left-most X-Forwarded-For entry, which the client
// writes, was its address: 40 failed logins, each from a "new" address, and no 429.
t.test('regression: TRUST_PROXY=true let a client choose its address; behind one proxy hop (TRUST_PROXY=1) it is the address the proxy saw', async (t) => {
  const app = Fastify(serverOptions({ logLevel: 'silent', trustProxy: '1' }))
  await app.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET, rootHandlers: true, overloadMaxEventLoopDelay: 0 })
  t.teardown(() => app.close())
  // What one proxy (on loopback) sends on: the client's own header, then the address it saw appended.
  const throughTheProxy = (client: string, forged: string, payload: object, url = '/api/v1/auth/login') =>
    app.inject({ method: 'POST', url, remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': `${forged}, ${client}` }, payload })
  const attempts = LOGIN_LIMITS.perIp + 10

  const rest: number[] = []
  for (let i = 0; i < attempts; i++) {
    rest.push((await throughTheProxy('203.0.113.40', `198.51.100.${i}`, { email: `nobody${i}@example.com`, password: 'a wrong guess' })).statusCode)
  }
  t.same([...new Set(rest.slice(0, LOGIN_LIMITS.perIp))], [401], 'failed logins, each with a new left-most entry')
  t.same([...new Set(rest.slice(LOGIN_LIMITS.perIp))], [429], 'counted as one address: refused past the per-address limit')

  const query = 'mutation ($email: String!, $password: String!) { login(email: $email, password: $password) { accessToken } }'
  const graphql: Array<string | undefined> = []
  for (let i = 0; i < attempts; i++) {
    const res = await throughTheProxy('203.0.113.41', `198.51.100.${i}`, { query, variables: { email: `nobody${i}@example.com`, password: 'a wrong guess' } }, '/graphql')
    graphql.push((res.json() as { errors?: Array<{ extensions?: { code?: string } }> }).errors?.[0]?.extensions?.code)
  }
  t.notOk(graphql.slice(0, LOGIN_LIMITS.perIp).includes('RATE_LIMITED'), 'GraphQL: failed logins')
  t.same([...new Set(graphql.slice(LOGIN_LIMITS.perIp))], ['RATE_LIMITED'], 'GraphQL: counted as one address as well')
})

t.test('REQUEST_TIMEOUT: a request whose body trickles in is answered 408 and closed', async (t) => {
  const origin = new URL(await listening(t, { requestTimeout: 1000 }))
  const socket = connect(Number(origin.port), origin.hostname)
  t.teardown(() => socket.destroy())
  let received = ''
  socket.on('data', (chunk) => { received += String(chunk) })
  const closed = new Promise((resolve) => socket.once('close', resolve))
  socket.write('POST /api/v1/users HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{')
  const trickle = setInterval(() => { if (!socket.destroyed) socket.write(' ') }, 300)
  await closed
  clearInterval(trickle)
  t.match(received, /^HTTP\/1\.1 408 /, 'answered 408')
})

/** What each of `count` clients sending `body` at once to `url` read: a status, or its connection's error. */
async function answersTo (url: string, body: Buffer, count: number): Promise<string[]> {
  return Promise.all(Array.from({ length: count }, async () =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
      .then((r) => String(r.status), (e: Error & { cause?: { code?: string } }) => e.cause?.code ?? e.message)))
}

// A server process of its own: a client in the server's own process hands it the body too quickly
// to see the broken connections.
t.test('regression: a body answered before it was read (413, 401, 429) broke the client\'s connection; now the client reads the answer', async (t) => {
  const { url } = await startServer(t, { RATE_LIMIT_MAX: '40' })
  const huge = Buffer.alloc(2 * 1024 * 1024, 97)
  for (const path of ['/api/v1/users', '/graphql']) {
    t.same([...new Set(await answersTo(url + path, huge, 10))], ['413'], `${path}: a body over 1 MiB, every client reads the 413`)
  }
  const large = Buffer.alloc(900 * 1024, 97)
  t.same([...new Set(await answersTo(url + '/api/v1/posts', large, 10))], ['401'], 'a large body without a token: every client reads the 401')
  await answersTo(url + '/api/v1/users', Buffer.from('{}'), 10)
  t.same([...new Set(await answersTo(url + '/api/v1/users', large, 10))], ['429'], 'over the rate limit: every client reads the 429')
})

t.test('logs: JSON unless a person reads them at a terminal outside production, or LOG_FORMAT says otherwise', async (t) => {
  t.equal(logFormat({ nodeEnv: 'development' }, false), 'json', 'stdout piped to a collector: JSON')
  t.equal(logFormat({ nodeEnv: 'development' }, true), 'pretty', 'a terminal in development: pino-pretty')
  t.equal(logFormat({}, true), 'pretty', 'development is the default')
  t.equal(logFormat({ nodeEnv: 'production' }, true), 'json', 'production, even at a terminal: JSON')
  t.equal(logFormat({ logFormat: 'json', nodeEnv: 'development' }, true), 'json', 'LOG_FORMAT=json wins')
  t.equal(logFormat({ logFormat: 'pretty', nodeEnv: 'production' }, false), 'pretty', 'LOG_FORMAT=pretty wins')

  const transportOf = (options: ReturnType<typeof serverOptions>) => (options.logger as { transport?: { target: string } }).transport
  t.equal(transportOf(serverOptions({ logLevel: 'info' })), undefined, 'JSON: pino writes it itself, no transport')
  t.match(transportOf(serverOptions({ logLevel: 'info' }, { stdoutIsTerminal: true }))?.target, /pino-pretty/, 'pretty: pino-pretty')

  t.equal(configFromEnv({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty')
  t.equal(configFromEnv({}).logFormat, undefined, 'unset: decided by NODE_ENV and the terminal')
  t.throws(() => configFromEnv({ LOG_FORMAT: 'xml' }), ConfigError)
})

const isJson = (line: string): boolean => {
  try {
    return typeof JSON.parse(line) === 'object'
  } catch {
    return false
  }
}

t.test('LOG_FORMAT=pretty: the server writes lines for people, not JSON', async (t) => {
  const server = await startServer(t, { LOG_FORMAT: 'pretty', LOG_LEVEL: 'info' })
  await fetch(`${server.url}/health`)
  // pino-pretty writes from a worker thread: its lines arrive a little after the answer.
  for (let i = 0; i < 100 && !server.stdout().includes('request completed'); i++) await new Promise((resolve) => setTimeout(resolve, 100))
  const lines = server.stdout().split('\n').filter((line) => line.trim() !== '')
  t.match(server.stdout(), /^\[[0-9:.]+\] INFO: Server listening at http:\/\/127\.0\.0\.1:[0-9]+$/m)
  t.match(server.stdout(), /^\[[0-9:.]+\] INFO: request completed$/m)
  t.match(server.stdout(), /"url": "\/health"/, 'with the request itself, indented below')
  t.same(lines.filter(isJson), [], 'no line is JSON')
})
