import fc from 'fast-check'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import t from 'tap'
import { adminToken, body, build, signedIn } from '../helpers/app.js'

type Json = Record<string, any>
type Test = Parameters<Parameters<typeof t.test>[0]>[0]
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
type BodyKind = 'user' | 'post' | 'comment' | 'product' | 'order' | 'profile' | 'login' | 'token' | 'none'
type Caller = 'alice' | 'bob' | 'admin' | 'anonymous' | 'garbage'

/** Requests per database: about 370 in all, so that the file stays quick. */
const REST_RUNS = 170
const GRAPHQL_RUNS = 80
/** Batches of valid writes sent at the same time, to test the invariants under concurrency. */
const WRITE_BATCHES = 40
const WRITE_BATCH_SIZE = 3
/** An answer slower than this counts as a hang. */
const HANG_MS = 15_000

/** Every route of the resource style, `{id}` standing for a path id. */
const ROUTES: Array<[Method, string, BodyKind]> = [
  ['POST', '/users', 'user'], ['GET', '/users', 'none'], ['GET', '/users/{id}', 'none'],
  ['PUT', '/users/{id}', 'user'], ['PATCH', '/users/{id}', 'user'], ['DELETE', '/users/{id}', 'none'],
  ['GET', '/users/{id}/posts', 'none'], ['GET', '/users/{id}/orders', 'none'],
  ['GET', '/users/{id}/profile', 'none'], ['PUT', '/users/{id}/profile', 'profile'], ['PATCH', '/users/{id}/profile', 'profile'],
  ['POST', '/users/{id}/verify-email', 'none'], ['POST', '/users/{id}/reset-password', 'none'],
  ['POST', '/auth/login', 'login'], ['POST', '/auth/logout', 'none'],
  ['POST', '/auth/verify-email', 'token'], ['POST', '/auth/reset-password', 'token'],
  ['GET', '/posts', 'none'], ['GET', '/posts/{id}', 'none'], ['POST', '/posts', 'post'],
  ['PUT', '/posts/{id}', 'post'], ['PATCH', '/posts/{id}', 'post'], ['DELETE', '/posts/{id}', 'none'],
  ['GET', '/posts/{id}/comments', 'none'], ['POST', '/posts/{id}/comments', 'comment'], ['DELETE', '/comments/{id}', 'none'],
  ['GET', '/products', 'none'], ['GET', '/products/{id}', 'none'], ['POST', '/products', 'product'],
  ['PUT', '/products/{id}', 'product'], ['PATCH', '/products/{id}', 'product'], ['DELETE', '/products/{id}', 'none'],
  ['POST', '/orders', 'order'], ['POST', '/orders', 'order'], ['GET', '/orders', 'none'], ['GET', '/orders/{id}', 'none'],
  ['POST', '/orders/{id}/cancel', 'none'], ['POST', '/orders/{id}/pay', 'none'], ['POST', '/orders/{id}/ship', 'none']
]

/** `encodeURIComponent`, except that a lone surrogate becomes the invalid UTF-8 a careless client would send. */
const encode = (value: string): string =>
  value.split(/([\uD800-\uDBFF][\uDC00-\uDFFF])/).map((part, i) => i % 2 === 1 ? encodeURIComponent(part) : part.replace(/[^\uD800-\uDFFF]+/g, encodeURIComponent).replace(/[\uD800-\uDFFF]/g, '%ED%A0%80')).join('')

const NASTY = [
  '', ' ', '\u0000', 'a\u0000b', '\uD800', '💥', '👩‍👩‍👧‍👦', 'e\u0301', 'مرحبا', '\u202Eevil', '\r\n', 'x'.repeat(301),
  "' OR '1'='1", '1; DROP TABLE users; --', '%', '_', '\\', '__proto__', 'constructor', 'null', 'NaN', '-0', '1e308',
  '9999999999999999999', 'ada@example.com', 'ALICE@EXAMPLE.COM', 'https://example.com/a.png', 'javascript:alert(1)'
]
const nasty = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 3, arbitrary: fc.constantFrom(...NASTY) },
  { weight: 1, arbitrary: fc.emailAddress() }
)
const number = fc.oneof(
  fc.integer({ min: -5, max: 30 }),
  fc.double({ noNaN: true }),
  fc.constantFrom(0, -0, 0.001, 19.99, 19.999, 1e308, -1, 2 ** 31, 2 ** 53, 9_999_999_999.99)
)
/** Ids that mostly hit rows that exist, and sometimes anything at all. */
const rowId = fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max: 12 }) }, { weight: 1, arbitrary: number }, { weight: 1, arbitrary: nasty })
const pathId = fc.oneof(
  { weight: 6, arbitrary: fc.integer({ min: 1, max: 12 }).map(String) },
  { weight: 2, arbitrary: fc.constantFrom('0', '-1', '1.5', '1e3', '0x1', ' 1', '9999999999999999999', '9007199254740993', 'abc', '__proto__', "1' OR '1'='1", '%00', '%', '%FF', '%ED%A0%80', '1'.repeat(300)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }).map(encode) }
)
const text = fc.oneof({ weight: 2, arbitrary: fc.lorem({ maxCount: 3 }) }, { weight: 3, arbitrary: nasty })

const word = fc.lorem({ maxCount: 2 }).filter((w) => w.length > 0)
/** Bodies the schema accepts, so that writes get through and the invariants have something to check. */
const validBodies: Record<BodyKind, fc.Arbitrary<unknown>> = {
  user: fc.record({ name: word, email: fc.stringMatching(/^[a-z0-9]{1,12}$/).map((local) => `${local}@example.com`), password: fc.constant('long enough password') }),
  post: fc.record({ title: word, content: fc.lorem() }),
  comment: fc.record({ text: fc.lorem() }),
  product: fc.record({ name: word, category: word, price: fc.integer({ min: 0, max: 100_000 }).map((cents) => cents / 100), stock: fc.integer({ min: 0, max: 50 }) }),
  order: fc.record({ items: fc.uniqueArray(fc.record({ product_id: fc.integer({ min: 1, max: 6 }), quantity: fc.integer({ min: 1, max: 4 }) }), { selector: (item) => item.product_id, minLength: 1, maxLength: 3 }) }),
  profile: fc.record({ bio: fc.lorem(), location: word }),
  login: fc.constant({ email: 'alice@example.com', password: 'correct horse battery' }),
  token: fc.record({ token: word, password: fc.constant('long enough password') }),
  none: fc.constant(undefined)
}

/** Bodies of the right shape with hostile values. */
const bodies: Record<BodyKind, fc.Arbitrary<unknown>> = {
  user: fc.record({ name: text, email: fc.oneof(fc.emailAddress(), nasty), password: fc.oneof(text, fc.constant('long enough password')) }, { requiredKeys: [] }),
  post: fc.record({ title: text, content: text }, { requiredKeys: [] }),
  comment: fc.record({ text }, { requiredKeys: [] }),
  product: fc.record({ name: text, description: fc.oneof(text, fc.constant(null)), category: text, price: number, stock: number }, { requiredKeys: [] }),
  order: fc.record({ items: fc.array(fc.record({ product_id: rowId, quantity: fc.oneof(fc.integer({ min: -2, max: 12 }), number) }, { requiredKeys: ['product_id', 'quantity'] }), { maxLength: 5 }) }, { requiredKeys: [] }),
  profile: fc.record({ bio: fc.oneof(text, fc.constant(null)), avatar_url: fc.oneof(text, fc.webUrl()), location: text }, { requiredKeys: [] }),
  login: fc.record({ email: fc.oneof(fc.constant('alice@example.com'), nasty), password: fc.oneof(fc.constant('correct horse battery'), text) }, { requiredKeys: [] }),
  token: fc.record({ token: text, password: text }, { requiredKeys: [] }),
  none: fc.constant(undefined)
}

const PARAMS = ['limit', 'offset', 'page', 'cursor', 'sort', 'order', 'total', 'fields', 'include', 'q', 'email', 'name', 'author_id', 'category', 'price_min', 'price_max', 'in_stock', 'status', 'version']
const VALUES = ['1', '2', '100', '101', '0', '-1', 'id', '-id', 'name', '-price', 'created_at', 'total', 'title', 'asc', 'desc', 'true', 'false', 'estimated', 'name,email', 'id,items', 'posts,profile', 'author,comments', 'user', 'pending', 'cancelled', 'eyJ2IjoxfQ', 'v2']
const queryString = fc.array(fc.tuple(
  fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...PARAMS) }, { weight: 1, arbitrary: nasty }),
  fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...VALUES) }, { weight: 2, arbitrary: nasty }, { weight: 1, arbitrary: number.map(String) })
), { maxLength: 4 }).map((pairs) => pairs.map(([k, v]) => `${encode(k)}=${encode(v)}`).join('&'))

/** Printable ASCII or a few hostile values: what a header can carry through `inject`. */
const headerValue = fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('', '*', 'W/"x"', '"abc"', 'a\r\nx-forged: 1', 'x'.repeat(300)))
const extraHeaders = fc.record({
  'if-match': headerValue,
  'if-none-match': headerValue,
  'idempotency-key': headerValue,
  'x-request-id': headerValue,
  accept: fc.oneof(fc.constantFrom('application/json', 'application/vnd.api.v1+json', 'application/vnd.api.v2+json', '*/*', 'text/html'), headerValue)
}, { requiredKeys: [] })
const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  { weight: 1, arbitrary: fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data', 'application/json; charset=utf-16') }
)
const headers = fc.tuple(fc.oneof({ weight: 2, arbitrary: fc.constant({}) }, { weight: 1, arbitrary: extraHeaders }), contentType)
  .map(([extra, type]): Record<string, string> => ({ ...extra, 'content-type': type }))

const payload = (kind: BodyKind) => fc.oneof(
  { weight: 4, arbitrary: validBodies[kind].map((value) => value === undefined ? undefined : JSON.stringify(value)) },
  { weight: 3, arbitrary: bodies[kind].map((value) => value === undefined ? undefined : JSON.stringify(value)) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
  { weight: 1, arbitrary: fc.constant(undefined) }
)

const caller = fc.constantFrom<Caller>('alice', 'alice', 'bob', 'admin', 'admin', 'anonymous', 'garbage')

interface RestRequest { method: Method, url: string, caller: Caller, headers: Record<string, string>, payload: string | undefined }

const restRequest: fc.Arbitrary<RestRequest> = fc.constantFrom(...ROUTES).chain(([method, path, kind]) => fc.record({
  method: fc.constant(method),
  url: fc.tuple(fc.constantFrom('/api/v1', '/api/v1', '/api'), pathId, fc.oneof(fc.constant(''), queryString)).map(([prefix, id, query]) => `${prefix}${path.replace('{id}', id)}${query === '' ? '' : '?' + query}`),
  caller,
  headers,
  payload: payload(kind)
}))

/** Fresh tokens for each request, so that a fuzzed logout revokes nothing the next request needs. */
function authorization (app: FastifyInstance, who: Caller, ids: Record<'alice' | 'bob' | 'admin', number>): Record<string, string> {
  if (who === 'anonymous') return {}
  if (who === 'garbage') return { authorization: 'Bearer not.a.token' }
  return { authorization: `Bearer ${app.accessTokens.issue({ id: ids[who], role: who === 'admin' ? 'admin' : 'user' }).accessToken}` }
}

async function answer (app: FastifyInstance, options: InjectOptions): Promise<LightMyRequestResponse> {
  let timer: NodeJS.Timeout | undefined
  const hang = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms`)), HANG_MS) })
  try {
    return await Promise.race([app.inject(options), hang])
  } finally {
    clearTimeout(timer)
  }
}

const isJson = (res: LightMyRequestResponse) => /json/.test(String(res.headers['content-type']))

/** What is wrong with a REST answer, by the contract; undefined when nothing is. */
function restViolation (res: LightMyRequestResponse): string | undefined {
  if (res.statusCode >= 500) return `a ${res.statusCode}`
  if (res.statusCode === 204 || res.statusCode === 304) return res.body === '' ? undefined : 'a body on 204/304'
  if (!isJson(res)) return `content-type ${String(res.headers['content-type'])}`
  let parsed: Json
  try { parsed = JSON.parse(res.body) as Json } catch { return 'a body that is not JSON' }
  if (res.statusCode < 400) return undefined
  const extra = Object.keys(parsed).filter((key) => key !== 'error' && key !== 'field')
  if (typeof parsed.error !== 'string' || extra.length > 0) return 'an error body not in {error, field?} shape'
  if (parsed.field !== undefined && typeof parsed.field !== 'string') return 'a field that is not a string'
  return undefined
}

/** What is wrong with a GraphQL answer: 200 with data or coded errors; 4xx only for non-GraphQL bodies. */
function graphqlViolation (res: LightMyRequestResponse): string | undefined {
  if (res.statusCode >= 500) return `a ${res.statusCode}`
  if (!isJson(res)) return `content-type ${String(res.headers['content-type'])}`
  let parsed: Json
  try { parsed = JSON.parse(res.body) as Json } catch { return 'a body that is not JSON' }
  if (res.statusCode !== 200 && !(res.statusCode >= 400 && Array.isArray(parsed.errors))) return `a ${res.statusCode} without errors`
  if (!('data' in parsed) && !Array.isArray(parsed.errors)) return 'neither data nor errors'
  for (const error of (parsed.errors ?? []) as Json[]) {
    if (typeof error.message !== 'string' || typeof error.extensions?.code !== 'string') return 'an error without message or extensions.code'
    if (error.extensions.code === 'INTERNAL_SERVER_ERROR') return `INTERNAL_SERVER_ERROR: ${String(error.message)}`
  }
  return undefined
}

const OPERATIONS = [
  'query ($id: ID!, $n: Int) { user(id: $id) { id name email createdAt posts(limit: $n) { id title comments(limit: $n) { text author { name } } } } }',
  'query ($n: Int, $o: Int) { users(limit: $n, offset: $o) { id name posts(limit: $n) { id } } }',
  'query ($n: Int, $a: String) { usersConnection(first: $n, after: $a) { edges { cursor node { id name } } pageInfo { hasNextPage endCursor } } }',
  'query ($id: ID!, $n: Int) { post(id: $id) { id title content author { id name } comments(limit: $n) { id text post { id } } } }',
  'mutation ($i: CreateUserInput!) { createUser(input: $i) { id name email } }',
  'mutation ($id: ID!, $i: UpdateUserInput!) { updateUser(id: $id, input: $i) { id name email } }',
  'mutation ($id: ID!) { deleteUser(id: $id) }',
  'mutation ($i: CreatePostInput!) { createPost(input: $i) { id title author { id } } }',
  'mutation ($i: CreateCommentInput!) { createComment(input: $i) { id text post { id } } }',
  'mutation ($e: String!, $p: String!) { login(email: $e, password: $p) { accessToken tokenType expiresIn } }'
]
const gqlId = fc.oneof({ weight: 4, arbitrary: fc.integer({ min: 1, max: 12 }).map(String) }, { weight: 2, arbitrary: nasty }, { weight: 1, arbitrary: number })
const gqlVariables = fc.record({
  id: gqlId,
  n: fc.oneof(fc.integer({ min: -3, max: 120 }), number, nasty),
  o: fc.oneof(fc.integer({ min: -3, max: 50 }), number),
  a: nasty,
  e: fc.oneof(fc.constant('alice@example.com'), nasty),
  p: fc.oneof(fc.constant('correct horse battery'), nasty),
  i: fc.oneof(
    fc.record({ name: text, email: fc.oneof(fc.emailAddress(), nasty), password: text, title: text, content: text, authorId: gqlId, postId: gqlId, text }, { requiredKeys: [] }),
    fc.jsonValue({ maxDepth: 3 })
  )
}, { requiredKeys: [] })

interface GraphqlRequest { caller: Caller, method: 'GET' | 'POST', payload: string }

const graphqlRequest: fc.Arbitrary<GraphqlRequest> = fc.record({
  caller,
  method: fc.constantFrom<'GET' | 'POST'>('POST', 'POST', 'POST', 'GET'),
  payload: fc.oneof(
    { weight: 8, arbitrary: fc.record({ query: fc.constantFrom(...OPERATIONS), variables: gqlVariables }).map((b) => JSON.stringify(b)) },
    { weight: 1, arbitrary: fc.record({ query: fc.oneof(fc.string({ maxLength: 60 }), nasty), variables: fc.jsonValue({ maxDepth: 2 }), operationName: nasty }, { requiredKeys: [] }).map((b) => JSON.stringify(b)) },
    { weight: 1, arbitrary: fc.oneof(fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)), fc.string({ maxLength: 40 })) }
  )
})

/** The GET form of a request: its JSON fields as query parameters. */
function asGet (payload: string): string {
  let fields: Json
  try { fields = JSON.parse(payload) as Json } catch { return '/graphql?query=' + encode(payload) }
  if (fields === null || typeof fields !== 'object' || Array.isArray(fields)) return '/graphql?query=' + encode(payload)
  const pairs = Object.entries(fields).map(([k, v]) => `${encode(k)}=${encode(typeof v === 'string' ? v : JSON.stringify(v))}`)
  return '/graphql?' + pairs.join('&')
}

interface Write { method: Method, url: string, caller: Caller, payload?: unknown }

/** Writes the schema accepts, on rows that mostly exist: orders and their moves, stock changes, deletions. */
const validWrite: fc.Arbitrary<Write> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ method: fc.constant<Method>('POST'), url: fc.constant('/api/v1/orders'), caller: fc.constantFrom<Caller>('alice', 'bob'), payload: validBodies.order }) },
  { weight: 3, arbitrary: fc.record({ method: fc.constant<Method>('POST'), url: fc.tuple(fc.integer({ min: 1, max: 30 }), fc.constantFrom('cancel', 'cancel', 'pay', 'ship')).map(([id, move]) => `/api/v1/orders/${id}/${move}`), caller: fc.constant<Caller>('admin') }) },
  { weight: 1, arbitrary: fc.record({ method: fc.constant<Method>('PATCH'), url: fc.integer({ min: 1, max: 6 }).map((id) => `/api/v1/products/${id}`), caller: fc.constant<Caller>('admin'), payload: fc.record({ stock: fc.integer({ min: 0, max: 30 }), price: fc.integer({ min: 0, max: 5000 }).map((c) => c / 100) }, { requiredKeys: [] }) }) },
  { weight: 1, arbitrary: fc.record({ method: fc.constant<Method>('DELETE'), url: fc.integer({ min: 1, max: 8 }).map((id) => `/api/v1/products/${id}`), caller: fc.constant<Caller>('admin') }) },
  { weight: 1, arbitrary: fc.record({ method: fc.constant<Method>('POST'), url: fc.constant('/api/v1/users'), caller: fc.constant<Caller>('anonymous'), payload: validBodies.user }) },
  { weight: 1, arbitrary: fc.record({ method: fc.constant<Method>('DELETE'), url: fc.integer({ min: 4, max: 20 }).map((id) => `/api/v1/users/${id}`), caller: fc.constant<Caller>('admin') }) },
  { weight: 1, arbitrary: fc.record({ method: fc.constant<Method>('POST'), url: fc.integer({ min: 1, max: 6 }).map((id) => `/api/v1/posts/${id}/comments`), caller: fc.constantFrom<Caller>('alice', 'bob'), payload: validBodies.comment }) },
  { weight: 1, arbitrary: fc.record({ method: fc.constant<Method>('DELETE'), url: fc.integer({ min: 1, max: 6 }).map((id) => `/api/v1/posts/${id}`), caller: fc.constant<Caller>('admin') }) }
)

/** Per product: stock plus what orders that are not cancelled hold of it. Placing and cancelling orders keep it. */
async function conserved (app: FastifyInstance): Promise<Map<number, number>> {
  const { rows } = await sql<{ id: number, conserved: number }>`
    select p.id, p.stock + coalesce((
      select sum(i.quantity) from order_items i join orders o on o.id = i.order_id
      where i.product_id = p.id and o.status <> 'cancelled'), 0) as conserved
    from products p`.execute(app.db)
  return new Map(rows.map((r) => [Number(r.id), Number(r.conserved)]))
}

/** The database invariants no sequence of requests may break. */
async function checkInvariants (t: Test, app: FastifyInstance, baseline: Map<number, number>) {
  const ids = async (query: ReturnType<typeof sql<{ id: number }>>) => (await query.execute(app.db)).rows.map((r) => Number(r.id))
  t.same(await ids(sql`select o.id from orders o where not exists (select 1 from order_items i where i.order_id = o.id)`), [], 'every order has at least one item')
  t.same(await ids(sql`select o.id from orders o join order_items i on i.order_id = o.id group by o.id, o.total having o.total <> sum(i.quantity * i.unit_price)`), [], 'every total is the sum of its items')
  t.same(await ids(sql`select id from products where stock < 0`), [], 'no stock is negative')
  const now = await conserved(app)
  const drifted = [...baseline].filter(([id, expected]) => now.has(id) && now.get(id) !== expected)
  t.same(drifted, [], 'stock + sold is conserved for every product')
  t.same(await ids(sql`select u.id from users u where not exists (select 1 from profiles p where p.user_id = u.id)`), [], 'every user has a profile')
  t.same(await ids(sql`select user_id as id from profiles p where not exists (select 1 from users u where u.id = p.user_id)`), [], 'no profile without its user')
  t.same(await ids(sql`select id from posts p where not exists (select 1 from users u where u.id = p.author_id)`), [], 'no post without its author')
  t.same(await ids(sql`select id from comments c where not exists (select 1 from posts p where p.id = c.post_id) or not exists (select 1 from users u where u.id = c.author_id)`), [], 'no comment without its post and author')
  t.same(await ids(sql`select id from orders o where not exists (select 1 from users u where u.id = o.user_id)`), [], 'no order without its user')
  t.same(await ids(sql`select order_id as id from order_items i where not exists (select 1 from orders o where o.id = i.order_id) or not exists (select 1 from products p where p.id = i.product_id)`), [], 'no order item without its order and product')
}

/** Writes that change stock other than by placing or cancelling an order: the baseline moves with them. */
function movesStock (method: string, url: string, status: number): boolean {
  if (status >= 300) return false
  const path = url.split('?')[0] ?? ''
  return (/\/products(\/|$)/.test(path) && method !== 'GET') || (/\/users\/[^/]+$/.test(path) && method === 'DELETE')
}

t.test('random requests to every route and to GraphQL never fault, and the data stays whole', async (t) => {
  const app = await build(t)
  const admin = await adminToken(app)
  const alice = await signedIn(app, { name: 'Alice', email: 'alice@example.com' })
  const bob = await signedIn(app, { name: 'Bob', email: 'bob@example.com' })
  const adminId = (await app.db.selectFrom('users').select('id').where('role', '=', 'admin').executeTakeFirstOrThrow()).id
  const ids = { alice: alice.id, bob: bob.id, admin: adminId }
  for (const [i, stock] of [5, 20, 0, 100].entries()) {
    await app.inject({ method: 'POST', url: '/api/v1/products', headers: admin, payload: { name: `Product ${i}`, category: 'fuzz', price: 1.25 * (i + 1), stock } })
  }
  for (const who of [alice, bob]) {
    const post = body<Json>(await app.inject({ method: 'POST', url: '/api/v1/posts', headers: who.headers, payload: { title: `By ${who.name}`, content: 'Hello' } }))
    await app.inject({ method: 'POST', url: `/api/v1/posts/${post.id as number}/comments`, headers: who.headers, payload: { text: 'Nice' } })
    await app.inject({ method: 'POST', url: '/api/v1/orders', headers: who.headers, payload: { items: [{ product_id: 1, quantity: 1 }, { product_id: 4, quantity: 2 }] } })
  }
  let baseline = await conserved(app)
  const seen = new Map<number, number>()
  const count = (res: LightMyRequestResponse) => seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1)

  await fc.assert(fc.asyncProperty(restRequest, async (request) => {
    // A content type without a body is Fastify's 400 "empty JSON body"; it is tried, but rarely.
    const { 'content-type': type, ...others } = request.headers
    const withType = request.payload !== undefined || type !== 'application/json'
    const res = await answer(app, {
      method: request.method,
      url: request.url,
      headers: { ...others, ...(withType && type !== undefined ? { 'content-type': type } : {}), ...authorization(app, request.caller, ids) },
      ...(request.payload === undefined ? {} : { payload: request.payload })
    })
    count(res)
    const problem = restViolation(res)
    if (problem !== undefined) throw new Error(`${request.method} ${request.url} → ${res.statusCode} ${res.body.slice(0, 300)}: ${problem}`)
    if (movesStock(request.method, request.url, res.statusCode)) baseline = await conserved(app)
  }), { numRuns: REST_RUNS })

  await fc.assert(fc.asyncProperty(graphqlRequest, async (request) => {
    const auth = authorization(app, request.caller, ids)
    const res = await answer(app, request.method === 'GET'
      ? { method: 'GET', url: asGet(request.payload), headers: auth }
      : { method: 'POST', url: '/graphql', headers: { ...auth, 'content-type': 'application/json' }, payload: request.payload })
    count(res)
    const problem = graphqlViolation(res)
    if (problem !== undefined) throw new Error(`GraphQL ${request.method} ${request.payload.slice(0, 300)} → ${res.statusCode} ${res.body.slice(0, 300)}: ${problem}`)
    if (res.body.includes('"deleteUser":true')) baseline = await conserved(app)
  }), { numRuns: GRAPHQL_RUNS })

  await fc.assert(fc.asyncProperty(fc.array(validWrite, { minLength: WRITE_BATCH_SIZE, maxLength: WRITE_BATCH_SIZE }), async (batch) => {
    const answers = await Promise.all(batch.map(async (write) => answer(app, {
      method: write.method,
      url: write.url,
      headers: authorization(app, write.caller, ids),
      ...(write.payload === undefined ? {} : { payload: write.payload as object })
    })))
    answers.forEach(count)
    for (const [i, res] of answers.entries()) {
      const problem = restViolation(res)
      if (problem !== undefined) throw new Error(`${batch[i]?.method ?? ''} ${batch[i]?.url ?? ''} → ${res.statusCode} ${res.body.slice(0, 300)}: ${problem}`)
    }
    if (batch.some((write, i) => movesStock(write.method, write.url, answers[i]?.statusCode ?? 500))) baseline = await conserved(app)
  }), { numRuns: WRITE_BATCHES })

  t.comment(`statuses: ${JSON.stringify(Object.fromEntries([...seen].sort(([a], [b]) => a - b)))}`)
  t.ok([...seen.keys()].some((status) => status >= 200 && status < 300), 'some requests succeeded')
  t.ok([...seen.keys()].some((status) => status >= 400), 'some were refused')
  await checkInvariants(t, app, baseline)
  t.equal((await app.inject({ url: '/ready' })).statusCode, 200, 'the database still answers')
})
