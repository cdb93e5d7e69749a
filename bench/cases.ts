import type autocannon from 'autocannon'

/** What the cases need from the running servers and the data set. */
export interface CaseContext {
  token: string
  /** A real `nextCursor` of `GET /users`, 95 % into the list. */
  deepCursor: string
  /** The `nextCursor` of `GET /users?limit=20`: the second page, 20 rows in. */
  secondCursor: string
  /** The `nextCursor` of the first page of the products case. */
  productsCursor: string
  /** The products orders are placed for. */
  productIds: number[]
  deepOffset: number
}

export interface BenchCase {
  id: string
  title: string
  /** `api-replica`: a second API like `api`, its reads on a streaming replica of the database (DATABASE_READ_URLS). */
  server: 'api' | 'api-replica' | 'baseline' | 'floor'
  /** Places orders: the stock of the bench products is checked afterwards. */
  writes: boolean
  /** Rows each request creates, for the bulk-write cases, compared in rows/s. Default: none counted. */
  rows?: number
  /**
   * `false`: left out of a full run of every case (whose passes fill its 10 minutes), run by `--quick`
   * and by `--only`. Default: true.
   */
  inFullRun?: boolean
  requests: (context: CaseContext) => autocannon.Request[]
}

export const PRODUCTS_PAGE = '/api/v1/products?category=books&in_stock=true&sort=-price&limit=20'

export const GRAPHQL_FLAT = '{ users(limit: 20) { id name email createdAt } }'
/** The contract's example (§6): cost 1 + 20 × (1 + 5 × (1 + 20 × 3)) = 6121. */
export const GRAPHQL_NESTED = '{ users(limit: 20) { posts(limit: 5) { comments { text author { name } } } } }'

const json = { 'content-type': 'application/json' }
const auth = (context: CaseContext) => ({ authorization: `Bearer ${context.token}` })

const get = (path: string, headers: Record<string, string> = {}): autocannon.Request => ({ method: 'GET', path, headers })

const graphql = (context: CaseContext, query: string): autocannon.Request =>
  ({ method: 'POST', path: '/graphql', headers: { ...json, ...auth(context) }, body: JSON.stringify({ query }) })

/** One order of 1–3 units of a random bench product, a new body for every request. */
const order = (context: CaseContext): autocannon.Request => ({
  method: 'POST',
  path: '/api/v1/orders',
  headers: { ...json, ...auth(context) },
  setupRequest: (request) => {
    const productId = context.productIds[Math.floor(Math.random() * context.productIds.length)]
    const quantity = 1 + Math.floor(Math.random() * 3)
    return { ...request, body: JSON.stringify({ items: [{ product_id: productId, quantity }] }) }
  }
})

/** The size of a bulk-write case's batch, and of its single-row twin's concurrency-matched rows/s comparison. */
export const BATCH = 100

/** Orders of one unit of a random bench product: one body, or an array of `BATCH`, new for every request. */
const orders = (context: CaseContext, batch: boolean): autocannon.Request => ({
  method: 'POST',
  path: '/api/v1/orders',
  headers: { ...json, ...auth(context) },
  setupRequest: (request) => {
    const one = () => ({ items: [{ product_id: context.productIds[Math.floor(Math.random() * context.productIds.length)], quantity: 1 }] })
    return { ...request, body: JSON.stringify(batch ? Array.from({ length: BATCH }, one) : one()) }
  }
})

let entries = 0
/** Rows of the declared `entries` (a create hook): one body, or an array of `BATCH`. */
const entry = (context: CaseContext, batch: boolean): autocannon.Request => ({
  method: 'POST',
  path: '/api/v1/entries',
  headers: { ...json, ...auth(context) },
  setupRequest: (request) => {
    const one = () => { entries++; return { name: `Entry ${entries}`, email: ` Entry${entries}@Example.com ` } }
    return { ...request, body: JSON.stringify(batch ? Array.from({ length: BATCH }, one) : one()) }
  }
})

const firstPage = (context: CaseContext) => get('/api/v1/users?limit=20', auth(context))
const deepPage = (context: CaseContext) => get(`/api/v1/users?limit=20&cursor=${encodeURIComponent(context.deepCursor)}`, auth(context))
const productsPage = (context: CaseContext) => get(`${PRODUCTS_PAGE}&cursor=${encodeURIComponent(context.productsCursor)}`)

export const cases: BenchCase[] = [
  {
    id: 'baseline',
    title: 'baseline: node:http + pg, first page of 20 users',
    server: 'baseline',
    writes: false,
    requests: () => [get('/')]
  },
  {
    // The very request of graphql-nested, answered by the baseline's server from one SQL statement (bench/nested.ts).
    id: 'baseline-nested',
    title: 'baseline: node:http + pg, the nested GraphQL case\'s answer from one SQL statement',
    server: 'baseline',
    writes: false,
    requests: (c) => [graphql(c, GRAPHQL_NESTED)]
  },
  {
    id: 'floor-first-page',
    title: 'reference: Fastify + pg + response schema, the same page',
    server: 'floor',
    writes: false,
    requests: () => [get('/users')]
  },
  {
    id: 'floor-first-page-jwt',
    title: 'reference: the same with the API\'s token checked by @fastify/jwt',
    server: 'floor',
    writes: false,
    requests: (c) => [get('/auth/users', auth(c))]
  },
  {
    id: 'floor-first-page-limited',
    title: 'reference: the same with @fastify/rate-limit per caller, as the contract asks',
    server: 'floor',
    writes: false,
    requests: (c) => [get('/limited/users', auth(c))]
  },
  {
    id: 'rest-first-page',
    title: 'GET /users?limit=20 (authenticated)',
    server: 'api',
    writes: false,
    requests: (c) => [firstPage(c)]
  },
  {
    // The first page's very request, on a second API whose reads go to a streaming replica: the
    // replica path next to the primary path (one machine: what routing costs, never what it scales).
    id: 'rest-first-page-replica',
    title: 'GET /users?limit=20 (authenticated) on an API reading from a streaming replica (DATABASE_READ_URLS)',
    server: 'api-replica',
    writes: false,
    requests: (c) => [firstPage(c)]
  },
  {
    id: 'rest-declared-first-page',
    title: 'GET /notes?limit=20 (a declared host resource, RESOURCES_MODULE; authenticated)',
    server: 'api',
    writes: false,
    requests: (c) => [get('/api/v1/notes?limit=20', auth(c))]
  },
  {
    id: 'rest-deep-keyset',
    title: 'GET /users?limit=20&cursor=<95 % deep>',
    server: 'api',
    writes: false,
    requests: (c) => [deepPage(c)]
  },
  {
    // Control, not a target: a cursor page at the other end of the list, the deep page's twin but for depth.
    id: 'rest-second-page',
    title: 'GET /users?limit=20&cursor=<20 rows in> (the second page)',
    server: 'api',
    writes: false,
    requests: (c) => [get(`/api/v1/users?limit=20&cursor=${encodeURIComponent(c.secondCursor)}`, auth(c))]
  },
  {
    // Control, not a target: a first page whose ids, names and e-mails have the deep page's five digits.
    id: 'rest-first-page-desc',
    title: 'GET /users?limit=20&sort=-id (first page, ids 100,000–99,981: the deep page\'s widths)',
    server: 'api',
    writes: false,
    requests: (c) => [get('/api/v1/users?limit=20&sort=-id', auth(c))]
  },
  {
    id: 'rest-deep-offset',
    title: 'GET /users?limit=20&offset=<90 % deep> (contrast)',
    server: 'api',
    writes: false,
    requests: (c) => [get(`/api/v1/users?limit=20&offset=${c.deepOffset}`, auth(c))]
  },
  {
    id: 'rest-products',
    title: 'GET /products?category&in_stock&sort=-price, page 2 (keyset)',
    server: 'api',
    writes: false,
    requests: (c) => [productsPage(c)]
  },
  {
    id: 'rest-include-posts',
    title: 'GET /users?limit=20&include=posts',
    server: 'api',
    writes: false,
    requests: (c) => [get('/api/v1/users?limit=20&include=posts', auth(c))]
  },
  {
    id: 'graphql-flat',
    title: 'GraphQL users(limit: 20) { id name email createdAt }',
    server: 'api',
    writes: false,
    requests: (c) => [graphql(c, GRAPHQL_FLAT)]
  },
  {
    id: 'graphql-nested',
    title: 'GraphQL users(20) { posts(5) { comments { text author { name } } } } (cost 6121)',
    server: 'api',
    writes: false,
    requests: (c) => [graphql(c, GRAPHQL_NESTED)]
  },
  {
    id: 'entries-create',
    title: 'POST /entries (a declared host resource with a create hook), one row',
    server: 'api',
    writes: false,
    rows: 1,
    inFullRun: false,
    requests: (c) => [entry(c, false)]
  },
  {
    id: 'entries-create-batch',
    title: `POST /entries with an array of ${BATCH} rows (one transaction)`,
    server: 'api',
    writes: false,
    rows: BATCH,
    inFullRun: false,
    requests: (c) => [entry(c, true)]
  },
  {
    id: 'orders-create',
    title: 'POST /orders (1 line, random product)',
    server: 'api',
    writes: true,
    rows: 1,
    requests: (c) => [order(c)]
  },
  {
    // The twin of orders-create in rows/s: the same orders, BATCH to a request.
    id: 'orders-create-batch',
    title: `POST /orders with an array of ${BATCH} orders (1 line each, random products)`,
    server: 'api',
    writes: true,
    rows: BATCH,
    inFullRun: false,
    requests: (c) => [orders(c, true)]
  },
  {
    id: 'mixed-90-10',
    title: 'mixed: 9 reads (users, deep users, products, GraphQL flat) : 1 POST /orders',
    server: 'api',
    writes: true,
    // autocannon sends each connection's requests in this order, round and round: exactly 90/10.
    requests: (c) => [
      firstPage(c), productsPage(c), graphql(c, GRAPHQL_FLAT), deepPage(c), firstPage(c),
      productsPage(c), graphql(c, GRAPHQL_FLAT), deepPage(c), firstPage(c), order(c)
    ]
  }
]
