import { createHmac, randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { connect as connectSocket } from 'node:net'
import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { serverOptions } from '../../plugins/server-options.js'
import tandem from '../../app/tandem.js'
import { adminToken, body, build, errorCodes, graphql, resetDb, signedIn, testDb, TEST_SECRET, type AuthHeaders } from '../helpers/app.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]
type Json = Record<string, any>

const json = { 'content-type': 'application/json' }

/** The contract's REST error body: `{error, field?}` and nothing else. */
function isErrorBody (res: LightMyRequestResponse): boolean {
  if (!/^application\/json/.test(String(res.headers['content-type']))) return false
  const parsed = JSON.parse(res.body) as Json
  const keys = Object.keys(parsed)
  return typeof parsed.error === 'string' && keys.every((k) => k === 'error' || (k === 'field' && typeof parsed.field === 'string'))
}

/** A REST answer that is not a fault: 2xx/3xx, or 4xx with the contract's error body. */
function assertNoFault (t: Test, res: LightMyRequestResponse, label: string): void {
  t.ok(res.statusCode < 500, `${label}: ${res.statusCode} ${res.body.slice(0, 120)}`)
  if (res.statusCode >= 400) t.ok(isErrorBody(res), `${label}: error body ${res.body.slice(0, 120)}`)
}

/** A Tandem app whose log lines (every level) are collected in `lines`. */
async function loggedApp (t: Test): Promise<{ app: FastifyInstance, lines: string[] }> {
  const db = await testDb()
  await resetDb(db)
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(...String(chunk).split('\n').filter((l) => l !== '')); done() } })
  const options = serverOptions({ logLevel: 'trace' })
  const app = Fastify({ ...options, logger: { ...(options.logger as object), stream } })
  await app.register(tandem, { db, jwtSecret: TEST_SECRET, rootHandlers: true })
  await app.ready()
  t.teardown(() => app.close())
  return { app, lines }
}

/** A small data set: an admin, a user with a post, a comment, a product and an order. */
async function fixtures (app: FastifyInstance) {
  const admin = await adminToken(app)
  const user = await signedIn(app, { name: 'Grace Hopper', email: 'grace@example.com' })
  await signedIn(app, { name: 'Alan Turing', email: 'alan@example.com' })
  const post = body<Json>(await app.inject({ method: 'POST', url: '/api/v1/posts', headers: user.headers, payload: { title: 'Compilers', content: 'A-0 System' } }))
  await app.inject({ method: 'POST', url: `/api/v1/posts/${post.id as number}/comments`, headers: user.headers, payload: { text: 'First!' } })
  const product = body<Json>(await app.inject({ method: 'POST', url: '/api/v1/products', headers: admin, payload: { name: 'Teletype', category: 'hardware', price: 99.5, stock: 10 } }))
  await app.inject({ method: 'POST', url: '/api/v1/orders', headers: user.headers, payload: { items: [{ product_id: product.id, quantity: 1 }] } })
  return { admin, user, post, product }
}

async function counts (app: FastifyInstance): Promise<Record<string, number>> {
  const result: Record<string, number> = {}
  for (const table of ['users', 'posts', 'comments', 'products', 'orders', 'order_items', 'profiles'] as const) {
    const row = await app.db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
    result[table] = Number(row.n)
  }
  return result
}

const INJECTIONS = [
  "' OR '1'='1",
  "1' OR 1=1 --",
  '1; DROP TABLE users; --',
  "x'); DELETE FROM products; --",
  "' UNION SELECT password_hash, email FROM users --",
  '1)) OR ((1=1',
  "'; SELECT pg_sleep(5); --",
  '$1',
  '\\',
  '%',
  '_',
  'id desc; drop table users',
  '"id"',
  'name,(select password_hash from users limit 1)'
]

t.test('SQL injection strings in every filter, q, sort, fields, include, cursor and id', async (t) => {
  const app = await build(t)
  const { admin, user } = await fixtures(app)
  const before = await counts(app)
  const lists: Array<[string, string[], AuthHeaders | undefined]> = [
    ['/api/v1/users', ['email', 'name', 'q', 'sort', 'order', 'fields', 'include', 'cursor', 'total'], user.headers],
    ['/api/v1/posts', ['author_id', 'q', 'sort', 'fields', 'include', 'cursor'], user.headers],
    ['/api/v1/products', ['category', 'price_min', 'price_max', 'in_stock', 'q', 'sort', 'fields', 'include', 'cursor'], undefined],
    ['/api/v1/orders', ['status', 'sort', 'fields', 'include', 'cursor'], admin],
    [`/api/v1/users/${user.id}/posts`, ['q', 'sort', 'fields', 'cursor'], user.headers],
    [`/api/v1/users/${user.id}/orders`, ['status', 'sort', 'fields', 'include', 'cursor'], user.headers],
    ['/api/v1/posts/1/comments', ['author_id', 'sort', 'fields', 'cursor'], user.headers]
  ]
  for (const [path, params, headers] of lists) {
    for (const param of params) {
      for (const attack of INJECTIONS) {
        const res = await app.inject({ url: `${path}?${param}=${encodeURIComponent(attack)}`, headers })
        assertNoFault(t, res, `${path} ${param}=${attack}`)
        // Equality filters and searches take the text literally: nothing matches it.
        if (res.statusCode === 200 && ['email', 'name', 'category', 'q'].includes(param) && !['%', '_', '\\'].includes(attack)) {
          t.same(body<Json>(res).data, [], `${path} ${param}=${attack} matches nothing`)
        }
      }
    }
  }
  for (const attack of ['%%%', '___', '\\\\\\']) {
    const res = await app.inject({ url: `/api/v1/users?q=${encodeURIComponent(attack)}`, headers: user.headers })
    t.same(body<Json>(res).data, [], `q=${attack} is literal text, not LIKE wildcards`)
  }
  for (const path of ['/api/v1/users/{id}', '/api/v1/posts/{id}', '/api/v1/products/{id}', '/api/v1/orders/{id}', '/api/v1/users/{id}/profile', '/api/v1/posts/{id}/comments']) {
    for (const attack of INJECTIONS) {
      const url = path.replace('{id}', encodeURIComponent(attack))
      const res = await app.inject({ url, headers: admin })
      t.equal(res.statusCode, 400, `${url}`)
      t.ok(isErrorBody(res) && body(res).field === 'id', `${url}: field id`)
    }
    const write = await app.inject({ method: 'DELETE', url: '/api/v1/products/' + encodeURIComponent(INJECTIONS[2] as string), headers: admin })
    t.equal(write.statusCode, 400)
  }
  for (const attack of INJECTIONS) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: `a${attack}@x.io`, password: attack } })
    t.ok([400, 401, 429].includes(res.statusCode), `login with ${attack}: ${res.statusCode}`)
    const gql = await graphql(app, 'query ($id: ID!, $after: String) { user(id: $id) { id } usersConnection(first: 1, after: $after) { edges { cursor } } }', {
      headers: user.headers, variables: { id: attack, after: attack }
    })
    t.equal(gql.statusCode, 200)
    t.ok(errorCodes(gql).length > 0 && errorCodes(gql).every((code) => code === 'BAD_USER_INPUT'), `GraphQL ${attack}: ${JSON.stringify(errorCodes(gql))}`)
  }
  t.same(await counts(app), before, 'nothing was written, deleted or dropped')
  const admins = await app.db.selectFrom('users').select('email').where('role', '=', 'admin').execute()
  t.same(admins.map((a) => a.email), ['admin@example.com'], 'no one became an administrator')
})

/** A JWT made by hand, to forge what @fastify/jwt would never sign. */
function forge (header: Json, claims: Json, key: string | undefined, hmac = 'sha256'): string {
  const encode = (part: Json) => Buffer.from(JSON.stringify(part)).toString('base64url')
  const signed = `${encode(header)}.${encode(claims)}`
  return `${signed}.${key === undefined ? '' : createHmac(hmac, key).update(signed).digest('base64url')}`
}

const claims = (extra: Json = {}) => {
  const now = Math.floor(Date.now() / 1000)
  return { sub: '1', role: 'admin', jti: randomUUID(), iss: 'tandem', iat: now, exp: now + 900, ...extra }
}

/** The token is refused in both styles: 401 with `WWW-Authenticate: Bearer`, and UNAUTHENTICATED. */
async function assertRefused (t: Test, app: FastifyInstance, token: string, message: RegExp = /invalid token/) {
  const headers = { authorization: `Bearer ${token}` }
  const rest = await app.inject({ url: '/api/v1/users', headers })
  t.equal(rest.statusCode, 401)
  t.equal(rest.headers['www-authenticate'], 'Bearer')
  t.ok(isErrorBody(rest))
  t.match(body(rest).error, message)
  const write = await app.inject({ method: 'POST', url: '/api/v1/products', headers, payload: { name: 'Free', category: 'x', price: 0 } })
  t.equal(write.statusCode, 401, 'an admin-only write is refused too')
  const gql = await graphql(app, '{ users(limit: 1) { id } }', { headers })
  t.equal(gql.statusCode, 200)
  t.same(errorCodes(gql), ['UNAUTHENTICATED'])
}

t.test('JWT with alg none is refused', async (t) => {
  const app = await build(t)
  await fixtures(app)
  await assertRefused(t, app, forge({ alg: 'none', typ: 'JWT' }, claims(), undefined))
  await assertRefused(t, app, forge({ alg: 'none', typ: 'JWT' }, claims(), undefined).slice(0, -1))
  await assertRefused(t, app, forge({ alg: 'NONE' }, claims(), TEST_SECRET))
})

t.test('JWT signed with a wrong key, or another algorithm, is refused', async (t) => {
  const app = await build(t)
  await fixtures(app)
  await assertRefused(t, app, forge({ alg: 'HS256', typ: 'JWT' }, claims(), 'not-the-secret-at-all-but-long'))
  await assertRefused(t, app, forge({ alg: 'HS256', typ: 'JWT' }, claims(), ''))
  await assertRefused(t, app, forge({ alg: 'HS512', typ: 'JWT' }, claims(), TEST_SECRET, 'sha512'), /invalid token/)
  const genuine = app.accessTokens.issue({ id: 2, role: 'user' }).accessToken
  const [head, , signature] = genuine.split('.')
  const promoted = Buffer.from(JSON.stringify(claims({ sub: '2' }))).toString('base64url')
  await assertRefused(t, app, `${head ?? ''}.${promoted}.${signature ?? ''}`)
})

t.test('JWT expired is refused', async (t) => {
  const app = await build(t)
  await fixtures(app)
  const past = Math.floor(Date.now() / 1000) - 3600
  await assertRefused(t, app, forge({ alg: 'HS256', typ: 'JWT' }, claims({ iat: past - 900, exp: past }), TEST_SECRET), /token expired/)
})

t.test('JWT revoked by logout is refused', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: user.headers })).statusCode, 204)
  await assertRefused(t, app, user.headers.authorization.slice('Bearer '.length), /token revoked/)
})

t.test('JWT oversized is refused without work', async (t) => {
  const app = await build(t)
  await fixtures(app)
  await assertRefused(t, app, forge({ alg: 'HS256', typ: 'JWT' }, claims({ pad: 'x'.repeat(64 * 1024) }), TEST_SECRET))
  await assertRefused(t, app, 'a'.repeat(200_000), /invalid token/)
  const res = await app.inject({ url: '/api/v1/users', headers: { authorization: 'Bearer ' + 'a.b.'.repeat(10_000) } })
  t.equal(res.statusCode, 401)
})

t.test('JWT with a wrong issuer, a bad sub or no jti is refused', async (t) => {
  const app = await build(t)
  await fixtures(app)
  const header = { alg: 'HS256', typ: 'JWT' }
  for (const bad of [{ iss: 'someone-else' }, { sub: '1 OR 1=1' }, { sub: '-1' }, { sub: 1 }, { jti: undefined }, { role: 'root' }]) {
    await assertRefused(t, app, forge(header, claims(bad), TEST_SECRET), /invalid token/)
  }
})

t.test('a token of a deleted user cannot write anything', async (t) => {
  const app = await build(t)
  const { user, post } = await fixtures(app)
  const ghost = await signedIn(app, { email: 'ghost@example.com' })
  t.equal((await app.inject({ method: 'DELETE', url: `/api/v1/users/${ghost.id}`, headers: ghost.headers })).statusCode, 204)
  for (const [url, payload] of [['/api/v1/posts', { title: 'Boo', content: 'x' }], [`/api/v1/posts/${post.id as number}/comments`, { text: 'Boo' }], ['/api/v1/orders', { items: [{ product_id: 1, quantity: 1 }] }]] as const) {
    const res = await app.inject({ method: 'POST', url, headers: ghost.headers, payload })
    assertNoFault(t, res, url)
    t.ok(res.statusCode >= 400, `${url} refused: ${res.statusCode}`)
  }
  const orphans = await app.db.selectFrom('posts').select('id').where('author_id', '=', ghost.id).execute()
  t.same(orphans, [])
  t.ok(user)
})

t.test('bodies over 1 MiB are 413 in both styles', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  const big = 'x'.repeat(1024 * 1024)
  const rest = await app.inject({ method: 'POST', url: '/api/v1/posts', headers: { ...json, ...user.headers }, payload: JSON.stringify({ title: 't', content: big }) })
  t.equal(rest.statusCode, 413)
  t.same(body(rest), { error: 'request body is larger than 1 MiB' })
  const gql = await app.inject({ method: 'POST', url: '/graphql', headers: { ...json, ...user.headers }, payload: JSON.stringify({ query: '{ __typename }', variables: { big } }) })
  t.equal(gql.statusCode, 413)
  t.type(body<Json>(gql).errors[0].message, 'string')
})

t.test('JSON nested 10,000 levels deep is refused without a crash', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  const headers = { ...json, ...user.headers }
  const arrays = '['.repeat(10_000) + ']'.repeat(10_000)
  const objects = '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000)
  for (const payload of [arrays, objects, `{"title":"t","content":${objects}}`, `{"items":${arrays}}`]) {
    for (const url of ['/api/v1/posts', '/api/v1/orders', '/api/v1/users']) {
      const res = await app.inject({ method: 'POST', url, headers, payload })
      t.equal(res.statusCode, 400, `${url} ${payload.slice(0, 12)}`)
      t.ok(isErrorBody(res))
    }
  }
  const notGraphql = await app.inject({ method: 'POST', url: '/graphql', headers, payload: `{"query":${arrays}}` })
  t.equal(notGraphql.statusCode, 400)
  const variables = await app.inject({ method: 'POST', url: '/graphql', headers, payload: `{"query":"mutation ($i: CreateUserInput!) { createUser(input: $i) { id } }","variables":{"i":${objects}}}` })
  t.equal(variables.statusCode, 200)
  t.same([...new Set(errorCodes(body(variables)))], ['BAD_USER_INPUT'])
  const document = await graphql(app, '{ user(id: "1") '.repeat(10_000) + '}'.repeat(10_000), { headers: user.headers })
  t.equal(document.statusCode, 200)
  t.same(errorCodes(document), ['GRAPHQL_PARSE_FAILED'])
  t.equal((await app.inject({ url: '/health' })).statusCode, 200, 'still alive')
})

t.test('__proto__ and constructor keys cannot pollute prototypes', async (t) => {
  const app = await build(t)
  const { user, admin } = await fixtures(app)
  const prototypeKeys = Object.getOwnPropertyNames(Object.prototype).sort()
  const headers = { ...json, ...user.headers }
  const bodies = [
    '{"title":"t","content":"c","__proto__":{"isAdmin":true,"role":"admin"}}',
    '{"title":"t","content":"c","constructor":{"prototype":{"isAdmin":true}}}',
    '{"items":[{"product_id":1,"quantity":1,"__proto__":{"quantity":-5}}]}',
    '{"name":"n","email":"p@x.io","__proto__":{"role":"admin"}}'
  ]
  for (const payload of bodies) {
    for (const url of ['/api/v1/posts', '/api/v1/orders', '/api/v1/users']) {
      const res = await app.inject({ method: 'POST', url, headers, payload })
      t.equal(res.statusCode, 400, `${url} ${payload}`)
      t.ok(isErrorBody(res))
    }
  }
  const plain = await app.inject({ method: 'POST', url: '/api/v1/posts', headers, payload: '{"title":"t","content":"c","constructor":"x"}' })
  t.equal(plain.statusCode, 400)
  t.equal(body(plain).field, 'constructor')
  const gql = await app.inject({
    method: 'POST',
    url: '/graphql',
    headers,
    payload: '{"query":"mutation ($i: CreateUserInput!) { createUser(input: $i) { id } }","variables":{"i":{"name":"n","email":"q@x.io","__proto__":{"role":"admin"}}}}'
  })
  t.equal(gql.statusCode, 400)
  for (const query of ['__proto__[isAdmin]=true', 'constructor[prototype][isAdmin]=true', '__proto__=1', 'fields=__proto__', 'sort=__proto__', 'include=__proto__,constructor', 'toString=1']) {
    const res = await app.inject({ url: `/api/v1/users?${query}`, headers: user.headers })
    t.equal(res.statusCode, 400, query)
    t.ok(isErrorBody(res), query)
  }
  for (const id of ['__proto__', 'constructor', 'hasOwnProperty']) {
    t.equal((await app.inject({ url: `/api/v1/products/${id}`, headers: admin })).statusCode, 400, id)
  }
  t.same(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeKeys, 'Object.prototype is unchanged')
  t.equal(({} as Json).isAdmin, undefined)
  t.equal(({} as Json).role, undefined)
  const admins = await app.db.selectFrom('users').select('id').where('role', '=', 'admin').execute()
  t.equal(admins.length, 1, 'no one became an administrator')
})

t.test('GraphQL depth bombs are refused before they run', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  const nest = (levels: number) => '{ user(id: "1") { ' + 'posts { author { '.repeat(levels) + 'id' + ' } }'.repeat(levels) + ' } }'
  const deep = await graphql(app, nest(6), { headers: user.headers })
  t.same(errorCodes(deep), ['DEPTH_LIMIT_EXCEEDED'])
  t.notOk(deep.data)
  const introspection = await graphql(app, '{ __schema { types { fields { type { ' + 'ofType { '.repeat(12) + 'name' + ' }'.repeat(17), { headers: user.headers })
  t.same(errorCodes(introspection), ['DEPTH_LIMIT_EXCEEDED'])
  const fragments = await graphql(app, `{ user(id: "1") { ...A } }
    fragment A on User { posts { author { ...B } } }
    fragment B on User { posts { author { ...C } } }
    fragment C on User { posts { author { ...D } } }
    fragment D on User { posts { author { id } } }`, { headers: user.headers })
  t.same(errorCodes(fragments), ['DEPTH_LIMIT_EXCEEDED'], 'depth through fragments counts')
})

t.test('GraphQL alias bombs are bounded by cost and document size', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  const expensive = '{ ' + Array.from({ length: 50 }, (_, i) => `a${i}: users(limit: 100) { posts(limit: 100) { comments { text } } }`).join(' ') + ' }'
  t.same(errorCodes(await graphql(app, expensive, { headers: user.headers })), ['COMPLEXITY_LIMIT_EXCEEDED'])
  const many = '{ ' + Array.from({ length: 2000 }, (_, i) => `a${i}: __typename`).join(' ') + ' }'
  t.same(errorCodes(await graphql(app, many, { headers: user.headers })), ['GRAPHQL_PARSE_FAILED'], 'over the token limit')
  const cheap = '{ ' + Array.from({ length: 300 }, (_, i) => `a${i}: user(id: "1") { id }`).join(' ') + ' }'
  const ran = await graphql(app, cheap, { headers: user.headers })
  t.equal(ran.statusCode, 200)
  t.equal(Object.keys(ran.data ?? {}).length, 300, 'a cheap one runs (batched by the loader)')
  const logins = 'mutation { ' + Array.from({ length: 20 }, (_, i) => `l${i}: login(email: "grace@example.com", password: "guess-${i}") { accessToken }`).join(' ') + ' }'
  const brute = await graphql(app, logins)
  t.ok(errorCodes(brute).length > 0)
  t.notOk(brute.data, 'a brute-force batch of logins does not run')
})

t.test('GraphQL circular fragments are a validation error', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  const res = await graphql(app, '{ user(id: "1") { ...A } } fragment A on User { posts { author { ...B } } } fragment B on User { ...A }', { headers: user.headers })
  t.equal(res.statusCode, 200)
  t.same([...new Set(errorCodes(res))], ['GRAPHQL_VALIDATION_FAILED'])
  const self = await graphql(app, '{ ...Q } fragment Q on Query { ...Q }', { headers: user.headers })
  t.same([...new Set(errorCodes(self))], ['GRAPHQL_VALIDATION_FAILED'])
})

t.test('GraphQL batched-query floods are refused', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  const batch = JSON.stringify(Array.from({ length: 1000 }, () => ({ query: '{ users(limit: 100) { id } }' })))
  const res = await app.inject({ method: 'POST', url: '/graphql', headers: { ...json, ...user.headers }, payload: batch })
  t.equal(res.statusCode, 400, 'batching is off: an array is not a GraphQL request')
  t.type(body<Json>(res).errors[0].message, 'string')
  const operations = Array.from({ length: 200 }, (_, i) => `query Q${i} { users(limit: 100) { id } }`).join('\n')
  const none = await graphql(app, operations, { headers: user.headers })
  t.equal(none.statusCode, 200)
  t.same(errorCodes(none), ['BAD_USER_INPUT'], 'several operations without operationName run none')
  t.notOk(none.data)
})

t.test('regression: an unknown operationName was an INTERNAL_SERVER_ERROR', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  const res = await graphql(app, 'query A { __typename } query B { __typename }', { headers: user.headers, operationName: 'C\r\nforged' })
  t.equal(res.statusCode, 200)
  t.same(errorCodes(res), ['BAD_USER_INPUT'])
  t.match(res.errors?.[0]?.message, /Unknown operation named/)
})

t.test('GraphQL huge variables are bounded', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  const list = await graphql(app, 'query ($ids: [ID!]!) { user(id: "1") { id } }', { headers: user.headers, variables: { ids: Array.from({ length: 100_000 }, (_, i) => String(i)) } })
  // ~790 KB of variables: over GRAPHQL_MAX_VARIABLES_BYTES (512 KiB), refused before the document is even validated.
  t.same(errorCodes(list), ['BAD_USER_INPUT'], 'variables over their size bound are refused before anything runs')
  t.match(list.errors?.[0]?.message, /variables are larger than/)
  const unused = await graphql(app, 'query ($ids: [ID!]!) { user(id: "1") { id } }', { headers: user.headers, variables: { ids: ['1'] } })
  t.same(errorCodes(unused), ['GRAPHQL_VALIDATION_FAILED'], 'an unused variable is refused before anything runs')
  const wide = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i]))
  const keys = await graphql(app, '{ user(id: "1") { id } }', { headers: user.headers, variables: wide })
  t.equal(keys.statusCode, 200)
  const long = await graphql(app, 'mutation ($p: String!) { login(email: "grace@example.com", password: $p) { accessToken } }', { variables: { p: 'x'.repeat(900_000) } })
  t.equal(long.statusCode, 200)
  t.ok(errorCodes(long).every((code) => code === 'UNAUTHENTICATED' || code === 'BAD_USER_INPUT'), JSON.stringify(errorCodes(long)))
  const text = await graphql(app, 'mutation ($i: CreateCommentInput!) { createComment(input: $i) { id } }', { headers: user.headers, variables: { i: { postId: '1', text: 'x'.repeat(900_000) } } })
  t.same(errorCodes(text), ['BAD_USER_INPUT'], 'a text over its maximum length')
})

t.test('CR/LF in header values and ids cannot forge headers or log lines', async (t) => {
  const { app, lines } = await loggedApp(t)
  const user = await signedIn(app)
  const forged = '{"level":60,"msg":"forged"}'
  const attempts = [
    { url: '/api/v1/users', headers: { ...user.headers, 'x-request-id': `a\n${forged}` } },
    { url: '/api/v1/users', headers: { ...user.headers, 'x-request-id': `a\r\nx-forged: 1\r\n\r\n${forged}` } },
    { url: `/api/v1/users?q=${encodeURIComponent(`x\n${forged}`)}`, headers: user.headers },
    { url: `/api/v1/nope%0d%0a${encodeURIComponent(forged)}`, headers: user.headers },
    { method: 'POST' as const, url: '/api/v1/posts', headers: { ...user.headers, 'idempotency-key': `k\r\nx-forged: 1\n${forged}` }, payload: { title: `t\n${forged}`, content: 'c' } },
    { method: 'POST' as const, url: '/graphql', headers: user.headers, payload: { query: '{ __typename }', operationName: `x\n${forged}` } }
  ]
  for (const attempt of attempts) {
    const res = await app.inject(attempt)
    assertNoFault(t, res, attempt.url)
    t.notOk(res.headers['x-forged'], 'no forged header')
    t.notMatch(String(res.headers['x-request-id']), /[\r\n]/)
  }
  t.ok(lines.length > attempts.length, 'requests were logged')
  for (const line of lines) {
    let entry: Json | undefined
    try { entry = JSON.parse(line) as Json } catch {}
    t.ok(entry !== undefined, `every log line is one JSON object: ${line.slice(0, 80)}`)
    t.not(entry?.msg, 'forged')
    t.not(entry?.level, 60)
  }
})

t.test('CR in a header over a real socket is refused by the HTTP parser; the server lives on', async (t) => {
  const app = await build(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  const send = async (raw: string): Promise<string> => {
    const socket = connectSocket(port, '127.0.0.1')
    await once(socket, 'connect')
    let answer = ''
    socket.on('data', (chunk: Buffer) => { answer += chunk.toString() })
    socket.end(raw)
    await once(socket, 'close')
    return answer
  }
  const injected = await send('GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\rX-Forged: 1\r\nConnection: close\r\n\r\n')
  t.match(injected, /^HTTP\/1\.1 400/)
  t.notMatch(injected, /x-forged/i)
  const ok = await send('GET /health HTTP/1.1\r\nHost: x\r\nX-Request-Id: fine-1\r\nConnection: close\r\n\r\n')
  t.match(ok, /^HTTP\/1\.1 200/)
  t.match(ok, /x-request-id: fine-1/i)
})

t.test('absurd limit, offset and page values are 400s naming the parameter, never 500s', async (t) => {
  const app = await build(t)
  const { user, admin } = await fixtures(app)
  const absurd = ['1e308', '-0', '9999999999999999999', 'NaN', 'Infinity', '-Infinity', '-1', '0', '1.5', '', ' ', '0x10', '1e400', '1,2', '[]', '%00']
  for (const path of ['/api/v1/products', '/api/v1/users', '/api/v1/posts', '/api/v1/orders', '/api/v1/posts/1/comments']) {
    for (const param of ['limit', 'offset', 'page']) {
      for (const value of absurd) {
        const url = `${path}?${param}=${value === '%00' ? value : encodeURIComponent(value)}`
        const res = await app.inject({ url, headers: path.includes('orders') ? admin : user.headers })
        assertNoFault(t, res, url)
        // Query strings are coerced as Ajv does (`' '` and `'0x10'` are numbers); only valid integers in range pass.
        const number = value === '' ? Number.NaN : Number(value)
        const valid = Number.isInteger(number) && number >= (param === 'offset' ? 0 : 1) && number <= (param === 'limit' ? 100 : Number.MAX_SAFE_INTEGER)
        t.equal(res.statusCode, valid ? 200 : 400, `${url}`)
        if (!valid) t.equal(body(res).field, param, `${url}: field ${param}`)
      }
    }
  }
  for (const value of ['1e308', '-1', 'NaN', '1e400', '9999999999999999999']) {
    const res = await app.inject({ url: `/api/v1/products?price_min=${value}&price_max=${value}` })
    assertNoFault(t, res, `price ${value}`)
  }
  for (const args of ['limit: 2147483647', 'limit: -1', 'offset: -1', 'limit: 0', 'offset: 2147483647']) {
    const res = await graphql(app, `{ users(${args}) { id } }`, { headers: user.headers })
    t.equal(res.statusCode, 200, args)
    t.ok(res.data?.users !== undefined || errorCodes(res).every((code) => code === 'BAD_USER_INPUT'), `${args}: ${JSON.stringify(errorCodes(res))}`)
  }
  const overflow = await graphql(app, '{ users(limit: 9999999999999999999) { id } }', { headers: user.headers })
  t.same(errorCodes(overflow), ['GRAPHQL_VALIDATION_FAILED'], 'an Int over 32 bits is not an Int')
})

const UNICODE_NAMES = [
  '👩‍👩‍👧‍👦 Family Emoji',
  'Zoë Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇',
  'مرحبا بالعالم',
  'שלום \u202Eevil\u202C',
  'e\u0301 (combining) vs é',
  '𝕳𝖊𝖑𝖑𝖔 \uFEFFzero\u200Bwidth',
  '日本語の名前'
]

t.test('unicode names round-trip exactly and can be searched', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  for (const [i, name] of UNICODE_NAMES.entries()) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name, email: `u${i}@example.com` } })
    t.equal(res.statusCode, 201, name)
    t.equal(body(res).name, name, 'stored and returned byte for byte')
    // `q` needs 3 characters.
    const word = name.split(' ').find((w) => [...w].length >= 3) ?? name
    const found = await app.inject({ url: `/api/v1/users?q=${encodeURIComponent(word)}`, headers: user.headers })
    t.equal(found.statusCode, 200)
    t.ok(body<Json>(found).data.some((u: Json) => u.name === name), `q=${word} finds ${name}`)
    const exact = await app.inject({ url: `/api/v1/users?name=${encodeURIComponent(name)}`, headers: user.headers })
    t.same(body<Json>(exact).data.map((u: Json) => u.name), [name], 'name= matches exactly')
  }
  const post = await app.inject({ method: 'POST', url: '/api/v1/posts', headers: user.headers, payload: { title: UNICODE_NAMES.join(' | '), content: '🚀'.repeat(10_000) } })
  t.equal(post.statusCode, 201)
  t.equal(body(post).content, '🚀'.repeat(10_000))
  const gql = await graphql(app, 'mutation ($i: CreateUserInput!) { createUser(input: $i) { name } }', { variables: { i: { name: UNICODE_NAMES[0], email: 'gql-unicode@example.com', password: 'long enough password' } } })
  t.equal(gql.data?.createUser?.name, UNICODE_NAMES[0])
  const lone = await app.inject({ method: 'POST', url: '/api/v1/users', headers: json, payload: '{"name":"lone \\ud800 surrogate","email":"lone@example.com"}' })
  assertNoFault(t, lone, 'a lone surrogate')
})

t.test('very long strings: at the maximum they pass, beyond it they are a 400 naming the field', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'n'.repeat(200), email: 'long@example.com' } })).statusCode, 201)
  const tooLong = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'n'.repeat(201), email: 'longer@example.com' } })
  t.equal(tooLong.statusCode, 400)
  t.equal(body(tooLong).field, 'name')
  t.equal((await app.inject({ url: `/api/v1/users?q=${'q'.repeat(200)}`, headers: user.headers })).statusCode, 200)
  const longQ = await app.inject({ url: `/api/v1/users?q=${'q'.repeat(201)}`, headers: user.headers })
  t.equal(longQ.statusCode, 400)
  t.equal(body(longQ).field, 'q')
  const emoji = await app.inject({ method: 'POST', url: '/api/v1/posts', headers: user.headers, payload: { title: '🚀'.repeat(301), content: 'c' } })
  t.equal(emoji.statusCode, 400, 'lengths count characters, and 301 emoji are too many')
  t.equal(body(emoji).field, 'title')
  const url = await app.inject({ url: '/api/v1/users/' + '1'.repeat(5000), headers: user.headers })
  assertNoFault(t, url, 'a 5000-digit id')
})

t.test('regression: a NUL byte (\\u0000) in text was a 500; it is a 400 in both styles', async (t) => {
  const app = await build(t)
  const { user, admin, post } = await fixtures(app)
  const writes: Array<[string, string, Json, AuthHeaders | undefined]> = [
    ['POST', '/api/v1/users', { name: 'nul\u0000name', email: 'nul@example.com' }, undefined],
    ['PATCH', `/api/v1/users/${user.id}`, { name: '\u0000' }, user.headers],
    ['POST', '/api/v1/posts', { title: 'a\u0000', content: 'b' }, user.headers],
    ['POST', `/api/v1/posts/${post.id as number}/comments`, { text: '\u0000' }, user.headers],
    ['PUT', `/api/v1/users/${user.id}/profile`, { bio: 'bio\u0000', location: 'here' }, user.headers],
    ['POST', '/api/v1/products', { name: 'p', category: 'c\u0000', price: 1 }, admin],
    ['POST', '/api/v1/auth/verify-email', { token: 'a\u0000' }, undefined]
  ]
  for (const [method, url, payload, headers] of writes) {
    const res = await app.inject({ method: method as 'POST', url, payload, headers })
    t.equal(res.statusCode, 400, `${method} ${url}`)
    t.ok(isErrorBody(res), res.body)
  }
  for (const url of ['/api/v1/users?q=%00', '/api/v1/users?name=a%00b', '/api/v1/users?email=%00', '/api/v1/posts?q=%00', '/api/v1/products?q=%00', '/api/v1/products?category=%00']) {
    const res = await app.inject({ url, headers: user.headers })
    t.equal(res.statusCode, 400, url)
    t.ok(isErrorBody(res), url)
  }
  const gql = await graphql(app, 'mutation ($i: CreateUserInput!) { createUser(input: $i) { id } }', { variables: { i: { name: 'a\u0000', email: 'gnul@example.com', password: 'long enough password' } } })
  t.same(errorCodes(gql), ['BAD_USER_INPUT'])
  const nulPost = await graphql(app, 'mutation ($i: CreatePostInput!) { createPost(input: $i) { id } }', { headers: user.headers, variables: { i: { title: '\u0000', content: 'x', authorId: String(user.id) } } })
  t.same(errorCodes(nulPost), ['BAD_USER_INPUT'])
  t.equal(Number((await app.db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n), 3, 'nothing half-written')
})

t.test('logs redact Authorization, passwords and tokens', async (t) => {
  const { app, lines } = await loggedApp(t)
  const password = 'Sup3r-Secret-Passw0rd'
  await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'Ada', email: 'ada@example.com', password } })
  const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'ada@example.com', password } })
  const token = body<{ accessToken: string }>(login).accessToken
  const authorization = `Bearer ${token}`
  await app.inject({ url: '/api/v1/users', headers: { authorization } })
  await app.inject({ url: '/api/v1/users/999', headers: { authorization } })
  await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: json, payload: `{"email":"ada@example.com","password":"${password}" oops` })
  await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'ada@example.com', password: `${password}-wrong` } })
  await graphql(app, `mutation { login(email: "ada@example.com", password: "${password}") { accessToken } }`)
  await graphql(app, 'mutation ($p: String!) { login(email: "ada@example.com", password: $p) { accessToken } }', { variables: { p: password } })
  await graphql(app, 'mutation ($p: String!) { login(email: "ada@example.com", password: $p) { accessToken }', { variables: { p: password } })
  await graphql(app, '{ users(limit: 1) { id } }', { headers: { authorization } })
  await app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: { authorization } })
  await app.inject({ url: '/api/v1/users', headers: { authorization } })
  t.ok(lines.length > 20, 'the requests were logged')
  const log = lines.join('\n')
  const signature = token.split('.')[2] as string
  for (const secret of [password, signature, token]) t.notOk(log.includes(secret), `${secret.slice(0, 8)}… never appears in the log`)
})

t.test('regression: a password in a GET /graphql URL reached the log', async (t) => {
  const { app, lines } = await loggedApp(t)
  const password = 'Url-Borne-Secret-42'
  const query = encodeURIComponent(`mutation { login(email: "a@b.io", password: "${password}") { accessToken } }`)
  const res = await app.inject({ url: `/graphql?query=${query}&variables=${encodeURIComponent(JSON.stringify({ p: password }))}` })
  t.equal(res.statusCode, 405)
  await app.inject({ url: `/api/v1/products?password=${password}&token=${password}&q=visible` })
  const log = lines.join('\n')
  t.notOk(log.includes(password), 'the secret is not in the log')
  t.match(log, /query=\[redacted\]/)
  t.match(log, /q=visible/, 'other parameters are kept')
})

t.test('regression: an over-long path parameter or a malformed URL was answered in Fastify\'s own shape', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  for (const url of ['/api/v1/users/' + '1'.repeat(5000), '/api/v1/users/%E0%A4%A', '/api/v1/products/%', '/%']) {
    const res = await app.inject({ url, headers: { ...user.headers, 'x-request-id': 'bad-url-1' } })
    t.equal(res.statusCode, 400, url.slice(0, 40))
    t.ok(isErrorBody(res), res.body)
    t.equal(res.headers['x-request-id'], 'bad-url-1')
  }
})

t.test('regression: GET /graphql with query=null, variables=1 or an unknown operationName was a 500', async (t) => {
  const app = await build(t)
  const { user } = await fixtures(app)
  const typename = encodeURIComponent('{ __typename }')
  const two = encodeURIComponent('query A { __typename } query B { __typename }')
  const cases: Array<[string, number, string]> = [
    ['query=null', 200, 'GRAPHQL_PARSE_FAILED'],
    [`query=${typename}&variables=1`, 400, 'BAD_REQUEST'],
    [`query=${typename}&variables=%5B%5D`, 400, 'BAD_REQUEST'],
    [`query=${typename}&extensions=%22x%22`, 400, 'BAD_REQUEST'],
    [`query=${typename}&operationName=null`, 200, 'BAD_USER_INPUT'],
    [`query=${two}`, 200, 'BAD_USER_INPUT']
  ]
  for (const [query, status, code] of cases) {
    const res = await app.inject({ url: `/graphql?${query}`, headers: user.headers })
    t.equal(res.statusCode, status, query)
    t.same(body<Json>(res).errors.map((e: Json) => e.extensions.code), [code], query)
  }
  const chosen = await app.inject({ url: `/graphql?query=${two}&operationName=B`, headers: user.headers })
  t.same(body(chosen), { data: { __typename: 'Query' } })
})
