import { IncomingMessage, ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify'
import helmet from 'helmet'
import t from 'tap'
import { configFromEnv, ConfigError } from '../../plugins/config.js'
import { GRAPHIQL_CSP } from '../../graphql/graphiql.js'
import { API_CSP, helmetPolicy, MAX_REQUEST_ID_LENGTH, parseCorsOrigins, REQUEST_ID_HEADER } from '../../plugins/security.js'
import { serverOptions } from '../../plugins/server-options.js'
import tandem, { type TandemPluginOptions } from '../../app/tandem.js'
import { authHeaders, body, build, TEST_SECRET, testDb } from '../helpers/app.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** Follows the one redirect `/docs` answers with, to the page itself. */
async function docsPage (app: FastifyInstance): Promise<LightMyRequestResponse> {
  const res = await app.inject({ url: '/docs' })
  if (res.statusCode !== 302) return res
  return app.inject({ url: '/docs/' + String(res.headers.location ?? '').replace(/^.*\//, '') })
}

t.test('helmet headers suitable for an API, with a strict CSP on JSON answers', async (t) => {
  const app = await build(t)
  for (const url of ['/health', '/api/v1/products', '/api/v1/nope', '/openapi.json']) {
    const res = await app.inject({ url })
    t.equal(res.headers['x-content-type-options'], 'nosniff', url)
    t.equal(res.headers['x-frame-options'], 'SAMEORIGIN', url)
    t.equal(res.headers['referrer-policy'], 'no-referrer', url)
    t.match(res.headers['strict-transport-security'], /max-age=\d+/, url)
    t.equal(res.headers['cross-origin-opener-policy'], 'same-origin', url)
    t.equal(res.headers['content-security-policy'], API_CSP, url)
    t.notOk(res.headers['x-powered-by'], url)
  }
  const withToken = await app.inject({ url: '/api/v1/users', headers: await authHeaders(app) })
  t.equal(withToken.headers['content-security-policy'], API_CSP, 'authenticated answers too')
  const graphql = await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ __typename }' } })
  t.equal(graphql.headers['content-security-policy'], API_CSP, 'and GraphQL answers')
})

t.test('the CSP does not break /docs and /graphiql (their HTML carries policies of their own)', async (t) => {
  const app = await build(t)
  const docs = await docsPage(app)
  t.equal(docs.statusCode, 200)
  t.match(docs.headers['content-type'], /^text\/html/)
  t.not(docs.headers['content-security-policy'], API_CSP, '/docs keeps its own policy (swagger-ui staticCSP)')
  const graphiql = await app.inject({ url: '/graphiql' })
  t.equal(graphiql.statusCode, 200)
  t.match(graphiql.headers['content-type'], /^text\/html/)
  t.equal(graphiql.headers['content-security-policy'], GRAPHIQL_CSP, 'GraphiQL\'s own policy (its assets are served by the API)')
  t.equal(graphiql.headers['x-content-type-options'], 'nosniff', 'the other headers still apply')
})

t.test('without corsOrigins there are no CORS headers and no preflight', async (t) => {
  const app = await build(t)
  const res = await app.inject({ url: '/api/v1/products', headers: { origin: 'https://evil.example' } })
  t.equal(res.statusCode, 200)
  t.notOk(res.headers['access-control-allow-origin'])
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/api/v1/products',
    headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' }
  })
  t.equal(preflight.statusCode, 404)
  t.notOk(preflight.headers['access-control-allow-origin'])
})

t.test('corsOrigins lists the origins allowed, and only those', async (t) => {
  const app = await build(t, { corsOrigins: 'https://app.example.com, https://admin.example.com' })
  const allowed = await app.inject({ url: '/api/v1/products', headers: { origin: 'https://admin.example.com' } })
  t.equal(allowed.headers['access-control-allow-origin'], 'https://admin.example.com')
  t.match(allowed.headers.vary, /origin/i)
  t.match(allowed.headers['access-control-expose-headers'], /x-request-id/)
  t.notOk(allowed.headers['access-control-allow-credentials'], 'bearer tokens, no cookies')

  const other = await app.inject({ url: '/api/v1/products', headers: { origin: 'https://evil.example' } })
  t.equal(other.statusCode, 200, 'the answer itself is the same')
  t.notOk(other.headers['access-control-allow-origin'], 'but a browser may not read it')

  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/api/v1/orders',
    headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, idempotency-key' }
  })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-origin'], 'https://app.example.com')
  t.match(preflight.headers['access-control-allow-methods'], /POST/)
  t.match(preflight.headers['access-control-allow-headers'], /authorization/)
  t.match(preflight.headers['access-control-allow-headers'], /idempotency-key/)
})

t.test('corsOrigins `*` allows any origin', async (t) => {
  const app = await build(t, { corsOrigins: '*' })
  const res = await app.inject({ url: '/graphql?query=%7B__typename%7D', headers: { origin: 'https://anyone.example' } })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['access-control-allow-origin'], '*')
})

t.test('CORS_ORIGINS is read from the environment and checked at start', async (t) => {
  t.equal(configFromEnv({ CORS_ORIGINS: 'https://a.example, http://localhost:5173' }).corsOrigins, 'https://a.example, http://localhost:5173')
  t.same(parseCorsOrigins('https://a.example, http://localhost:5173'), ['https://a.example', 'http://localhost:5173'])
  t.equal(parseCorsOrigins(' * '), '*')
  t.equal(configFromEnv({}).corsOrigins, undefined, 'default: none')
  for (const bad of ['a.example', 'https://a.example/path', 'https://a.example,,', 'ftp://a.example']) {
    t.throws(() => configFromEnv({ CORS_ORIGINS: bad }), ConfigError, bad)
    t.throws(() => configFromEnv({ CORS_ORIGINS: bad }), /CORS_ORIGINS/, bad)
  }
})

t.test('helmet\'s headers and the CSP are on every error answer too: 400, 401, 404, 413, 415, 429, 500', async (t) => {
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  await app.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET, rateLimitMax: 2 })
  app.get('/fails', async () => { throw new Error('boom') })
  await app.ready()
  t.teardown(() => app.close())
  const cases: Array<[number, { method?: 'GET' | 'POST', url: string, payload?: string, headers?: Record<string, string> }]> = [
    [400, { url: '/api/v1/products?limit=0' }],
    [401, { url: '/api/v1/users' }],
    [404, { url: '/api/v1/nope' }],
    [413, { method: 'POST', url: '/api/v1/users', payload: JSON.stringify({ name: 'x'.repeat(1024 * 1024) }), headers: { 'content-type': 'application/json' } }],
    [415, { method: 'POST', url: '/api/v1/users', payload: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }],
    [500, { url: '/fails' }]
  ]
  for (const [status, request] of cases) {
    const res = await app.inject({ ...request, remoteAddress: `10.0.0.${status % 250}` })
    t.equal(res.statusCode, status, request.url)
    t.same(helmetHeaders.filter((name) => res.headers[name] === undefined), [], `${status}: helmet's headers`)
    t.equal(res.headers['content-security-policy'], API_CSP, `${status}: the CSP`)
  }
  let limited: LightMyRequestResponse | undefined
  for (let i = 0; i < 5 && limited?.statusCode !== 429; i++) limited = await app.inject({ url: '/api/v1/products', remoteAddress: '10.9.9.9' })
  t.equal(limited?.statusCode, 429)
  t.same(helmetHeaders.filter((name) => limited?.headers[name] === undefined), [], '429: helmet\'s headers')
})

t.test('x-request-id is echoed on every answer, and made when absent', async (t) => {
  const app = await build(t)
  const given = await app.inject({ url: '/api/v1/products', headers: { 'x-request-id': 'trace-abc.123_XYZ' } })
  t.equal(given.headers['x-request-id'], 'trace-abc.123_XYZ')

  const made = await app.inject({ url: '/api/v1/products' })
  t.match(made.headers['x-request-id'], UUID)
  const another = await app.inject({ url: '/api/v1/products' })
  t.not(another.headers['x-request-id'], made.headers['x-request-id'], 'a fresh one each time')

  const cases: Array<[string, { method?: 'GET' | 'POST', url: string, payload?: string }]> = [
    ['404', { url: '/api/v1/nope' }],
    ['401', { url: '/api/v1/users' }],
    ['400', { url: '/api/v1/products?limit=0' }],
    ['413', { method: 'POST', url: '/api/v1/users', payload: JSON.stringify({ name: 'x'.repeat(1024 * 1024) }) }],
    ['GraphQL', { method: 'POST', url: '/graphql', payload: JSON.stringify({ query: '{ __typename }' }) }],
    ['/health', { url: '/health' }]
  ]
  for (const [name, request] of cases) {
    const res = await app.inject({ ...request, headers: { 'x-request-id': `id-${name}`, 'content-type': 'application/json' } })
    t.equal(res.headers['x-request-id'], `id-${name}`, name)
  }
})

t.test('an x-request-id with CR/LF, control characters or over 200 characters is replaced', async (t) => {
  const app = await build(t)
  const unsafe = [
    'abc\r\nx-forged: 1',
    'abc\nforged',
    'tab\there',
    'with space',
    'x'.repeat(MAX_REQUEST_ID_LENGTH + 1),
    'ünïcödé',
    ''
  ]
  for (const id of unsafe) {
    const res = await app.inject({ url: '/api/v1/products', headers: { 'x-request-id': id } })
    t.equal(res.statusCode, 200, JSON.stringify(id.slice(0, 20)))
    t.match(res.headers['x-request-id'], UUID, `${JSON.stringify(id.slice(0, 20))} replaced by a fresh id`)
    t.notOk(res.headers['x-forged'])
  }
  const longest = 'x'.repeat(MAX_REQUEST_ID_LENGTH)
  t.equal((await app.inject({ url: '/health', headers: { 'x-request-id': longest } })).headers['x-request-id'], longest, '200 characters are fine')
})

t.test('production mode: no GraphiQL, and no stack or internals in a 500', async (t) => {
  const app = await build(t, { nodeEnv: 'production' })
  const graphiql = await app.inject({ url: '/graphiql' })
  t.equal(graphiql.statusCode, 404)
  t.same(Object.keys(body(graphiql)), ['error'])

  await app.db.schema.alterTable('profiles').renameTo('profiles_hidden').execute()
  t.teardown(() => app.db.schema.alterTable('profiles_hidden').renameTo('profiles').execute())
  const res = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'A', email: 'a@b.io' } })
  t.equal(res.statusCode, 500)
  t.same(body(res), { error: 'internal server error' })
  t.notMatch(res.body, /profiles|relation|at .*\.ts|stack/i)

  const graphql = await app.inject({ method: 'POST', url: '/graphql', payload: { query: 'mutation { createUser(input: {name: "A", email: "b@b.io"}) { id } }' } })
  t.equal(graphql.statusCode, 200)
  const [error] = body<{ errors: Array<{ message: string, extensions: Record<string, unknown> }> }>(graphql).errors
  t.same(error?.extensions, { code: 'INTERNAL_SERVER_ERROR' })
  t.equal(error?.message, 'internal server error')
  t.notMatch(graphql.body, /profiles|relation|stack|\.ts:/i)
})

t.test('development mode serves GraphiQL', async (t) => {
  const app = await build(t, { nodeEnv: 'development' })
  t.equal((await app.inject({ url: '/graphiql' })).statusCode, 200)
})

/** A host application with routes of its own, added before and after Tandem (when `options` are given) registers. */
async function hostApp (t: Test, options?: TandemPluginOptions): Promise<FastifyInstance> {
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  app.get('/before', async () => ({ host: true }))
  if (options !== undefined) await app.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET, ...options })
  app.get('/after', async () => ({ host: true }))
  await app.ready()
  t.teardown(() => app.close())
  return app
}

// What helmet 8 sets without its CSP.
const helmetHeaders = ['cross-origin-opener-policy', 'cross-origin-resource-policy', 'origin-agent-cluster', 'referrer-policy', 'strict-transport-security',
  'x-content-type-options', 'x-dns-prefetch-control', 'x-download-options', 'x-frame-options', 'x-permitted-cross-domain-policies', 'x-xss-protection']
const tandemHeaders = [...helmetHeaders, 'content-security-policy', REQUEST_ID_HEADER]
const request = { headers: { 'x-request-id': 'host-call-1', origin: 'https://app.example.com' } }

t.test('by default the host\'s own routes get Tandem\'s headers too, as docs/plugins.md says', async (t) => {
  const app = await hostApp(t, { corsOrigins: 'https://app.example.com' })
  for (const url of ['/before', '/after']) {
    const res = await app.inject({ url, ...request })
    t.same(body(res), { host: true }, url)
    t.same(tandemHeaders.filter((name) => res.headers[name] === undefined), [], `${url}: helmet's headers, the CSP and x-request-id`)
    t.equal(res.headers['strict-transport-security'], 'max-age=31536000; includeSubDomains', url)
    t.equal(res.headers['content-security-policy'], API_CSP, url)
    t.equal(res.headers['access-control-allow-origin'], 'https://app.example.com', `${url}: CORS`)
  }
})

t.test('security: false: a host route gets none of Tandem\'s headers, and Tandem still serves', async (t) => {
  const bare = await hostApp(t)
  const app = await hostApp(t, { security: false })
  for (const url of ['/before', '/after']) {
    const res = await app.inject({ url, ...request })
    t.same(body(res), { host: true }, url)
    t.same(tandemHeaders.filter((name) => res.headers[name] !== undefined), [], `${url}: no helmet header, no CSP, no x-request-id`)
    t.same(Object.keys(res.headers).sort(), Object.keys((await bare.inject({ url, ...request })).headers).sort(), `${url}: the headers of the same application without Tandem`)
  }
  const products = await app.inject({ url: '/api/v1/products', ...request })
  t.equal(products.statusCode, 200, 'Tandem\'s routes answer')
  t.equal(products.headers['content-security-policy'], undefined, 'without Tandem\'s headers either: the host sets its own')
  t.equal(products.headers['access-control-allow-origin'], undefined)
})

t.test('security: false with corsOrigins is refused at start: nothing would apply them', async (t) => {
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  t.teardown(() => app.close())
  const db = await testDb()
  await t.rejects(async () => { await app.register(tandem, { db, jwtSecret: TEST_SECRET, security: false, corsOrigins: 'https://app.example.com' }) }, /corsOrigins needs security/)
})

t.test('helmet\'s headers are those its middleware sets on a real response, read once at start', async (t) => {
  const options = { contentSecurityPolicy: false } as const
  const res = new ServerResponse(new IncomingMessage(new Socket()))
  res.setHeader('x-powered-by', 'something')
  let finished = false
  helmet(options)(res.req, res, (error?: unknown) => { finished = error === undefined })
  t.ok(finished, 'the middleware finished at once, without an error')
  const policy = helmetPolicy(options)
  t.same(policy.headers, Object.fromEntries(Object.entries(res.getHeaders()).map(([name, value]) => [name, String(value)])), 'the same headers and values as the documented middleware')
  t.same(policy.removed, ['x-powered-by'])
  t.same(Object.keys(policy.headers).sort(), [...helmetHeaders].sort())
})

t.test('helmet\'s headers go out with the reply\'s own: a route may still set its own value, and nothing is set on the raw response first', async (t) => {
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  await app.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET })
  // Any header set on the raw response makes Node.js take its slower path for every header written after it.
  app.get('/raw', async (_request, reply) => ({ raw: reply.raw.getHeaderNames() }))
  app.get('/deny', async (_request, reply) => reply.header('x-frame-options', 'DENY').send({ host: true }))
  await app.ready()
  t.teardown(() => app.close())
  const raw = await app.inject({ url: '/raw' })
  t.same(body(raw), { raw: [] })
  t.same(helmetHeaders.filter((name) => raw.headers[name] === undefined), [], 'helmet\'s headers are on the answer')
  const deny = await app.inject({ url: '/deny' })
  t.equal(deny.headers['x-frame-options'], 'DENY', 'the route\'s own value wins')
  t.equal(deny.headers['referrer-policy'], 'no-referrer')
})
