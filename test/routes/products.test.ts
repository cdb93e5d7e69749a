import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import t from 'tap'
import { productMatches } from '../../db/products.js'
import { hasAtMostTwoDecimals } from '../../schema/products.js'
import { adminToken, authHeaders, body, build, signedIn } from '../helpers/app.js'

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
type Auth = { authorization: string } | undefined
interface Call { auth?: Auth, payload?: object, headers?: Record<string, string> }

const call = (app: FastifyInstance, method: Method, url: string, { auth, payload, headers }: Call = {}): Promise<LightMyRequestResponse> =>
  app.inject({ method, url: '/api/v1' + url, headers: { ...auth, ...headers }, ...(payload === undefined ? {} : { payload }) })

const lamp = { name: 'Desk lamp', description: 'A bright LED lamp', category: 'home', price: 19.99, stock: 5 }

async function addProducts (app: FastifyInstance, admin: Auth, products: object[]): Promise<Array<Record<string, unknown>>> {
  const created = []
  for (const product of products) {
    const res = await call(app, 'POST', '/products', { auth: admin, payload: product })
    if (res.statusCode !== 201) throw new Error(`${res.statusCode} ${res.body}`)
    created.push(body(res))
  }
  return created
}

t.test('POST /products (admin) creates a product; anyone reads it', async (t) => {
  const app = await build(t)
  const admin = await adminToken(app)
  const res = await call(app, 'POST', '/products', { auth: admin, payload: lamp })
  t.equal(res.statusCode, 201)
  const product = body(res)
  t.same(Object.keys(product).sort(), ['category', 'created_at', 'description', 'id', 'name', 'price', 'stock'])
  t.match(product, { ...lamp, id: Number })
  t.equal(res.headers.location, `/api/v1/products/${product.id as number}`)
  t.match(res.headers.etag, /^"[\w-]+"$/)

  const row = await app.db.selectFrom('products').selectAll().where('id', '=', product.id as number).executeTakeFirstOrThrow()
  t.match(row, { ...lamp, price: 19.99 }, 'the row holds exactly 19.99')

  const got = await call(app, 'GET', `/products/${product.id as number}`)
  t.equal(got.statusCode, 200, 'no token needed to read')
  t.same(body(got), product)
  t.equal(got.headers.etag, res.headers.etag, 'POST answers with the ETag a GET gives')

  const list = await call(app, 'GET', '/products')
  t.equal(list.statusCode, 200)
  t.same(body(list).data, [product])

  const minimal = await call(app, 'POST', '/products', { auth: admin, payload: { name: 'Pen', category: 'office', price: 2 } })
  t.equal(minimal.statusCode, 201)
  t.match(body(minimal), { description: null, stock: 0, price: 2 }, 'description defaults to null, stock to 0')
})

t.test('writes need an administrator: 401 without a token, 403 with a user\'s', async (t) => {
  const app = await build(t)
  const admin = await adminToken(app)
  const [product] = await addProducts(app, admin, [lamp])
  const url = `/products/${product?.id as number}`
  const user = await authHeaders(app, { id: 7 })
  const writes: Array<[Method, string, object | undefined]> = [
    ['POST', '/products', lamp],
    ['PUT', url, lamp],
    ['PATCH', url, { stock: 1 }],
    ['DELETE', url, undefined]
  ]
  for (const [method, path, payload] of writes) {
    const anonymous = await call(app, method, path, { ...(payload === undefined ? {} : { payload }) })
    t.equal(anonymous.statusCode, 401, `${method} without token`)
    t.equal(anonymous.headers['www-authenticate'], 'Bearer')
    t.equal(body(anonymous).error !== undefined, true)
    const bad = await call(app, method, path, { auth: { authorization: 'Bearer not.a.token' }, ...(payload === undefined ? {} : { payload }) })
    t.equal(bad.statusCode, 401, `${method} with a bad token`)
    const forbidden = await call(app, method, path, { auth: user, ...(payload === undefined ? {} : { payload }) })
    t.equal(forbidden.statusCode, 403, `${method} as a user`)
  }
  const row = await app.db.selectFrom('products').select(['stock']).where('id', '=', product?.id as number).executeTakeFirstOrThrow()
  t.equal(row.stock, lamp.stock, 'nothing was written')
  t.equal((await app.db.selectFrom('products').select('id').execute()).length, 1)
})

t.test('PUT replaces, PATCH changes some fields, DELETE removes', async (t) => {
  const app = await build(t)
  const admin = await adminToken(app)
  const [product] = await addProducts(app, admin, [lamp])
  const id = product?.id as number
  const url = `/products/${id}`

  const put = await call(app, 'PUT', url, { auth: admin, payload: { name: 'Floor lamp', category: 'home', price: 49.5, stock: 2 } })
  t.equal(put.statusCode, 200)
  t.same(body(put), { id, name: 'Floor lamp', description: null, category: 'home', price: 49.5, stock: 2, created_at: product?.created_at }, 'description not sent becomes null')
  t.match(put.headers.etag, /^"/)

  const putMissing = await call(app, 'PUT', url, { auth: admin, payload: { name: 'Floor lamp', category: 'home', price: 49.5 } })
  t.equal(putMissing.statusCode, 400)
  t.equal(body(putMissing).field, 'stock', 'PUT must say the stock')

  const patch = await call(app, 'PATCH', url, { auth: admin, payload: { price: 45, description: 'Tall' } })
  t.equal(patch.statusCode, 200)
  t.match(body(patch), { name: 'Floor lamp', price: 45, description: 'Tall', stock: 2 })
  const row = await app.db.selectFrom('products').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  t.match(row, { name: 'Floor lamp', price: 45, description: 'Tall', stock: 2 })

  const empty = await call(app, 'PATCH', url, { auth: admin, payload: {} })
  t.equal(empty.statusCode, 200, 'an empty PATCH changes nothing')
  t.same(body(empty), body(patch))

  t.equal((await call(app, 'PUT', '/products/999', { auth: admin, payload: { ...lamp } })).statusCode, 404)
  t.equal((await call(app, 'PATCH', '/products/999', { auth: admin, payload: { stock: 1 } })).statusCode, 404)

  const del = await call(app, 'DELETE', url, { auth: admin })
  t.equal(del.statusCode, 204)
  t.equal(del.body, '')
  t.equal((await call(app, 'GET', url)).statusCode, 404)
  t.equal((await call(app, 'DELETE', url, { auth: admin })).statusCode, 404)
  t.equal(await app.db.selectFrom('products').select('id').where('id', '=', id).executeTakeFirst(), undefined)
})

t.test('price: a JSON number with at most 2 decimals, checked exactly', async (t) => {
  t.ok(['19.99', '0.01', '0.1', '1', '0', '9999999999.99', '1234567.89'].every((p) => hasAtMostTwoDecimals(Number(p))))
  t.notOk(['19.999', '0.001', '1e-7', '1.005', '9999999999.999'].some((p) => hasAtMostTwoDecimals(Number(p))))

  const app = await build(t)
  const admin = await adminToken(app)
  const [product] = await addProducts(app, admin, [lamp])
  const url = `/products/${product?.id as number}`
  for (const price of [19.999, 0.001, 1e-7, 1.005, -1, 1e12, '19.99', null]) {
    for (const [method, path, payload] of [['POST', '/products', { ...lamp, price }], ['PUT', url, { ...lamp, price }], ['PATCH', url, { price }]] as const) {
      const res = await call(app, method, path, { auth: admin, payload })
      t.equal(res.statusCode, 400, `${method} price ${String(price)}`)
      t.equal(body(res).field, 'price')
    }
  }
  for (const price of [0.1, 0.3, 19.99, 1234567.89, 9999999999.99]) {
    const res = await call(app, 'PATCH', url, { auth: admin, payload: { price } })
    t.equal(res.statusCode, 200, `price ${price}`)
    t.equal(body(res).price, price)
  }
  const row = await app.db.selectFrom('products').select('price').where('id', '=', product?.id as number).executeTakeFirstOrThrow()
  t.equal(row.price, 9999999999.99)
})

t.test('invalid bodies and ids are 400 naming the field', async (t) => {
  const app = await build(t)
  const admin = await adminToken(app)
  const cases: Array<[object, string]> = [
    [{ category: 'a', price: 1 }, 'name'],
    [{ name: '', category: 'a', price: 1 }, 'name'],
    [{ name: 'a', price: 1 }, 'category'],
    [{ name: 'a', category: 'a' }, 'price'],
    [{ ...lamp, stock: -1 }, 'stock'],
    [{ ...lamp, stock: 1.5 }, 'stock'],
    [{ ...lamp, description: 3 }, 'description'],
    [{ ...lamp, colour: 'red' }, 'colour']
  ]
  for (const [payload, field] of cases) {
    const res = await call(app, 'POST', '/products', { auth: admin, payload })
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.equal(body(res).field, field)
    t.match(res.headers['content-type'], /^application\/json/)
  }
  for (const id of ['abc', '0', '-1', '1.5']) {
    t.equal(body(await call(app, 'GET', `/products/${id}`)).field, 'id', id)
  }
  t.same((await app.db.selectFrom('products').select('id').execute()), [], 'nothing was written')
})

t.test('GET /products: filters, search, sort and paging', async (t) => {
  const app = await build(t)
  const admin = await adminToken(app)
  await addProducts(app, admin, [
    { name: 'Desk lamp', description: 'Warm light for reading', category: 'home', price: 19.99, stock: 5 },
    { name: 'Floor lamp', category: 'home', price: 49.5, stock: 0 },
    { name: 'Notebook', description: 'Dotted paper, A5', category: 'office', price: 3.2, stock: 100 },
    { name: 'Fountain pen', description: 'Refillable', category: 'office', price: 35, stock: 3 },
    { name: 'Stapler', category: 'office', price: 8.75, stock: 0 },
    { name: 'Armchair', description: 'For reading by the lamp', category: 'home', price: 199, stock: 1 }
  ])
  const names = async (query: string): Promise<string[]> => {
    const res = await call(app, 'GET', '/products?' + query)
    t.equal(res.statusCode, 200, query)
    return body<{ data: Array<{ name: string }> }>(res).data.map((p) => p.name)
  }
  t.same(await names('category=office'), ['Notebook', 'Fountain pen', 'Stapler'])
  t.same(await names('price_min=19.99&price_max=49.5'), ['Desk lamp', 'Floor lamp', 'Fountain pen'], 'bounds are inclusive')
  t.same(await names('price_min=100'), ['Armchair'])
  t.same(await names('in_stock=true&category=home'), ['Desk lamp', 'Armchair'])
  t.same(await names('in_stock=false'), ['Floor lamp', 'Stapler'])
  t.same(await names('q=LAMP'), ['Desk lamp', 'Floor lamp', 'Armchair'], 'q matches name and description, any case')
  t.same(await names('q=fill'), ['Fountain pen'], 'q matches parts of words')
  t.same(await names('q=50%25'), [], 'the user\'s wildcards are literal')
  t.same(await names('sort=price'), ['Notebook', 'Stapler', 'Desk lamp', 'Fountain pen', 'Floor lamp', 'Armchair'])
  t.same(await names('sort=-price&limit=2'), ['Armchair', 'Floor lamp'])
  t.same(await names('sort=name&order=desc&category=home'), ['Floor lamp', 'Desk lamp', 'Armchair'])

  const inverted = await call(app, 'GET', '/products?price_min=50&price_max=10')
  t.equal(inverted.statusCode, 422)
  t.equal(body(inverted).field, 'price_min')

  for (const [query, field] of [['sort=stock', 'sort'], ['fields=secret', 'fields'], ['include=orders', 'include'], ['limit=0', 'limit'], ['limit=101', 'limit'], ['in_stock=maybe', 'in_stock'], ['price_min=-1', 'price_min'], ['price_max=abc', 'price_max'], ['colour=red', 'colour']] as const) {
    const res = await call(app, 'GET', '/products?' + query)
    t.equal(res.statusCode, 400, query)
    t.equal(body(res).field, field, query)
  }

  const narrowed = await call(app, 'GET', '/products?fields=name,price&limit=1')
  t.same(body(narrowed).data, [{ id: 1, name: 'Desk lamp', price: 19.99 }])
  const one = await call(app, 'GET', '/products/3?fields=price')
  t.same(body(one), { id: 3, price: 3.2 }, 'fields= applies to a single GET')
  t.equal((await call(app, 'GET', '/products/3?include=orders')).statusCode, 400)

  // Keyset through every product by price, descending, 4 per page.
  const seen: string[] = []
  let url = '/products?sort=-price&limit=4'
  for (let guard = 0; guard < 5; guard++) {
    const res = await call(app, 'GET', url)
    const page = body<{ data: Array<{ name: string }>, pagination: { hasMore: boolean, nextCursor: string | null } }>(res)
    seen.push(...page.data.map((p) => p.name))
    if (page.pagination.nextCursor === null) {
      t.equal(res.headers.link, undefined)
      break
    }
    t.match(res.headers.link, /rel="next"/)
    url = `/products?sort=-price&limit=4&cursor=${encodeURIComponent(page.pagination.nextCursor)}`
  }
  t.same(seen, ['Armchair', 'Floor lamp', 'Fountain pen', 'Desk lamp', 'Stapler', 'Notebook'])

  const first = body<{ pagination: { nextCursor: string } }>(await call(app, 'GET', '/products?limit=2&category=home'))
  const replay = await call(app, 'GET', `/products?limit=2&category=office&cursor=${encodeURIComponent(first.pagination.nextCursor)}`)
  t.equal(replay.statusCode, 400, 'a cursor is bound to its filters')
  t.equal(body(replay).field, 'cursor')

  const paged = body(await call(app, 'GET', '/products?page=2&limit=4&sort=name'))
  t.same(paged.meta, { page: 2, limit: 4, total: 6 })
  t.same((paged.data as Array<{ name: string }>).map((p) => p.name), ['Notebook', 'Stapler'])
  const offset = body(await call(app, 'GET', '/products?offset=5&limit=4'))
  t.same(offset.meta, { offset: 5, limit: 4, total: 6 })
  const counted = body(await call(app, 'GET', '/products?total=true&in_stock=true&limit=1'))
  t.match(counted.pagination, { total: 4, hasMore: true })
})

t.test('q uses the trigram index, on exactly the indexed expression', async (t) => {
  const app = await build(t)
  const plan = await app.db.transaction().execute(async (trx) => {
    await sql`set local enable_seqscan = off`.execute(trx)
    return trx.selectFrom('products').select('id').where(productMatches('lamp')).explain()
  })
  t.match(JSON.stringify(plan), /products_search_idx/)
})

t.test('conditional requests: ETag and 304 on GET, 412 on a stale If-Match', async (t) => {
  const app = await build(t)
  const admin = await adminToken(app)
  const [product] = await addProducts(app, admin, [lamp])
  const url = `/products/${product?.id as number}`

  const got = await call(app, 'GET', url)
  const etag = got.headers.etag as string
  t.match(etag, /^"[\w-]+"$/)
  const again = await call(app, 'GET', url, { headers: { 'if-none-match': etag } })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
  t.equal((await call(app, 'GET', url, { headers: { 'if-none-match': '"other"' } })).statusCode, 200)

  const patched = await call(app, 'PATCH', url, { auth: admin, payload: { stock: 9 }, headers: { 'if-match': etag } })
  t.equal(patched.statusCode, 200, 'a current If-Match lets the write through')
  const fresh = patched.headers.etag as string
  t.not(fresh, etag)
  t.equal((await call(app, 'GET', url)).headers.etag, fresh, 'the write answers with the new ETag')
  t.equal((await call(app, 'GET', url, { headers: { 'if-none-match': etag } })).statusCode, 200, 'the old ETag is no longer current')

  for (const [method, payload] of [['PATCH', { stock: 1 }], ['PUT', lamp], ['DELETE', undefined]] as const) {
    const stale = await call(app, method, url, { auth: admin, headers: { 'if-match': etag }, ...(payload === undefined ? {} : { payload }) })
    t.equal(stale.statusCode, 412, `${method} with a stale If-Match`)
    t.type(body(stale).error, 'string')
  }
  const row = await app.db.selectFrom('products').select('stock').where('id', '=', product?.id as number).executeTakeFirstOrThrow()
  t.equal(row.stock, 9, 'the stale writes changed nothing')

  const deleted = await call(app, 'DELETE', url, { auth: admin, headers: { 'if-match': fresh } })
  t.equal(deleted.statusCode, 204)
  t.equal((await call(app, 'DELETE', url, { auth: admin, headers: { 'if-match': fresh } })).statusCode, 404)
})

t.test('deleting a product that orders refer to is 409, and it stays', async (t) => {
  const app = await build(t)
  const admin = await adminToken(app)
  const [product] = await addProducts(app, admin, [lamp])
  const buyer = await signedIn(app)
  const order = await call(app, 'POST', '/orders', { auth: buyer.headers, payload: { items: [{ product_id: product?.id, quantity: 1 }] } })
  t.equal(order.statusCode, 201)
  const res = await call(app, 'DELETE', `/products/${product?.id as number}`, { auth: admin })
  t.equal(res.statusCode, 409)
  t.match(body(res), { error: /orders/ })
  t.notMatch(res.body, /constraint|order_items_product_id_fkey/, 'no database text')
  t.ok(await app.db.selectFrom('products').select('id').where('id', '=', product?.id as number).executeTakeFirst())
})
