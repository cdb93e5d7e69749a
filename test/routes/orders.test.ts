import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { adminToken, authHeaders, body, build, failRecording, signedIn, testDb } from '../helpers/app.js'
import { recordSql } from '../helpers/sql-log.js'

type Method = 'GET' | 'POST'
type Auth = { authorization: string } | undefined
interface Call { auth?: Auth, payload?: object, headers?: Record<string, string> }
type Json = Record<string, any>

const call = (app: FastifyInstance, method: Method, url: string, { auth, payload, headers }: Call = {}): Promise<LightMyRequestResponse> =>
  app.inject({ method, url: '/api/v1' + url, headers: { ...auth, ...headers }, ...(payload === undefined ? {} : { payload }) })

/** Products made straight in the database (the products API has its own tests). */
async function stockUp (app: FastifyInstance, products: Array<{ price: number, stock: number, name?: string }>): Promise<number[]> {
  const rows = await app.db.insertInto('products')
    .values(products.map((p, i) => ({ name: p.name ?? `Product ${i + 1}`, category: 'test', price: p.price, stock: p.stock })))
    .returning('id').execute()
  return rows.map((r) => r.id)
}

const stockOf = async (app: FastifyInstance, id: number): Promise<number> =>
  (await app.db.selectFrom('products').select('stock').where('id', '=', id).executeTakeFirstOrThrow()).stock

const order = (app: FastifyInstance, auth: Auth, items: Array<[number | undefined, number]>) =>
  call(app, 'POST', '/orders', { auth, payload: { items: items.map(([id, quantity]) => ({ product_id: id, quantity })) } })

t.test('POST /orders places an order: prices from the server, stock taken, rows written', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app)
  const [pen, ink] = await stockUp(app, [{ price: 19.99, stock: 10 }, { price: 0.1, stock: 5 }]) as [number, number]

  const res = await order(app, buyer.headers, [[ink, 3], [pen, 2]])
  t.equal(res.statusCode, 201)
  const placed = body<Json>(res)
  t.same(Object.keys(placed).sort(), ['created_at', 'id', 'items', 'status', 'total', 'user_id'])
  t.match(placed, { user_id: buyer.id, status: 'pending', total: 40.28 })
  t.same(placed.items, [
    { product_id: pen, quantity: 2, unit_price: 19.99 },
    { product_id: ink, quantity: 3, unit_price: 0.1 }
  ], 'items by product id, at the price of the moment')
  t.equal(res.headers.location, `/api/v1/orders/${placed.id as number}`)

  t.equal(await stockOf(app, pen), 8)
  t.equal(await stockOf(app, ink), 2)
  const row = await app.db.selectFrom('orders').selectAll().where('id', '=', placed.id).executeTakeFirstOrThrow()
  t.match(row, { user_id: buyer.id, status: 'pending', total: 40.28 })
  const items = await app.db.selectFrom('order_items').selectAll().where('order_id', '=', placed.id).orderBy('product_id').execute()
  t.same(items, [
    { order_id: placed.id, product_id: pen, quantity: 2, unit_price: 19.99 },
    { order_id: placed.id, product_id: ink, quantity: 3, unit_price: 0.1 }
  ])

  await app.db.updateTable('products').set({ price: 25 }).where('id', '=', pen).execute()
  const got = body<Json>(await call(app, 'GET', `/orders/${placed.id as number}`, { auth: buyer.headers }))
  t.equal(got.items[0].unit_price, 19.99, 'a later price change does not touch the order')
  t.equal(got.total, 40.28)
})

t.test('POST /orders: 401 without a token, 400 on bad input naming the field', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app)
  const [pen] = await stockUp(app, [{ price: 1, stock: 10 }]) as [number]

  const anonymous = await order(app, undefined, [[pen, 1]])
  t.equal(anonymous.statusCode, 401)
  t.equal(anonymous.headers['www-authenticate'], 'Bearer')

  const cases: Array<[object, string]> = [
    [{}, 'items'],
    [{ items: [] }, 'items'],
    [{ items: Array.from({ length: 101 }, (_, i) => ({ product_id: i + 1, quantity: 1 })) }, 'items'],
    [{ items: [{ product_id: pen, quantity: 0 }] }, 'items.0.quantity'],
    [{ items: [{ product_id: pen, quantity: 1 }, { product_id: pen + 1, quantity: 10_001 }] }, 'items.1.quantity'],
    [{ items: [{ product_id: pen, quantity: 1.5 }] }, 'items.0.quantity'],
    [{ items: [{ product_id: 'pen', quantity: 1 }] }, 'items.0.product_id'],
    [{ items: [{ product_id: pen }] }, 'items.0.quantity'],
    [{ items: [{ product_id: pen, quantity: 1, price: 0 }] }, 'items.0.price'],
    [{ items: [{ product_id: pen, quantity: 1 }], user_id: 2 }, 'user_id'],
    [{ items: [{ product_id: pen, quantity: 1 }, { product_id: pen, quantity: 2 }] }, 'items.1.product_id']
  ]
  for (const [payload, field] of cases) {
    const res = await call(app, 'POST', '/orders', { auth: buyer.headers, payload })
    t.equal(res.statusCode, 400, JSON.stringify(payload).slice(0, 80))
    t.equal(body(res).field, field)
  }
  t.equal(await stockOf(app, pen), 10)
  t.same(await app.db.selectFrom('orders').select('id').execute(), [], 'no order was written')
})

t.test('more than the stock, or an unknown product, is 422 naming the item, and nothing is taken', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app)
  const [pen, ink] = await stockUp(app, [{ price: 1, stock: 10 }, { price: 2, stock: 3 }]) as [number, number]

  const tooMany = await order(app, buyer.headers, [[ink, 4], [pen, 5]])
  t.equal(tooMany.statusCode, 422)
  t.equal(body(tooMany).field, 'items.0.quantity')
  t.match(body(tooMany).error, /only 3/)

  const unknown = await order(app, buyer.headers, [[pen, 5], [999, 1]])
  t.equal(unknown.statusCode, 422)
  t.equal(body(unknown).field, 'items.1.product_id')

  t.equal(await stockOf(app, pen), 10, 'the lines taken before the failure were rolled back')
  t.equal(await stockOf(app, ink), 3)
  t.same(await app.db.selectFrom('orders').select('id').execute(), [])
  t.same(await app.db.selectFrom('order_items').select('order_id').execute(), [])

  const exact = await order(app, buyer.headers, [[ink, 3]])
  t.equal(exact.statusCode, 201, 'the whole stock can be bought')
  t.equal(await stockOf(app, ink), 0)
})

t.test('50 concurrent orders for a product with stock 10 sell exactly 10', async (t) => {
  const app = await build(t)
  const buyers = await Promise.all([signedIn(app), signedIn(app), signedIn(app)])
  const [pen] = await stockUp(app, [{ price: 2.5, stock: 10 }]) as [number]

  const results = await Promise.all(Array.from({ length: 50 }, (_, i) => order(app, buyers[i % 3]?.headers, [[pen, 1]])))
  const codes = results.map((r) => r.statusCode)
  t.equal(codes.filter((c) => c === 201).length, 10, 'ten sold')
  t.equal(codes.filter((c) => c === 422).length, 40, 'the rest are refused')
  for (const refused of results.filter((r) => r.statusCode === 422)) t.equal(body(refused).field, 'items.0.quantity')

  const stock = await stockOf(app, pen)
  const sold = await app.db.selectFrom('order_items').select((eb) => eb.fn.sum<number>('quantity').as('n')).where('product_id', '=', pen).executeTakeFirstOrThrow()
  t.equal(stock, 0)
  t.equal(Number(sold.n), 10)
  t.equal(stock + Number(sold.n), 10, 'stock + sold is constant')
  t.equal((await app.db.selectFrom('orders').select('id').execute()).length, 10)
})

t.test('concurrent orders of the same products in opposite orders do not deadlock', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app)
  const [a, b, c] = await stockUp(app, [{ price: 1, stock: 100 }, { price: 2, stock: 100 }, { price: 3, stock: 100 }]) as [number, number, number]
  const results = await Promise.all(Array.from({ length: 30 }, (_, i) =>
    order(app, buyer.headers, i % 2 === 0 ? [[a, 1], [b, 1], [c, 1]] : [[c, 1], [b, 1], [a, 1]])))
  t.same([...new Set(results.map((r) => r.statusCode))], [201])
  t.same([await stockOf(app, a), await stockOf(app, b), await stockOf(app, c)], [70, 70, 70])
})

t.test('GET /orders/{id}: owner or admin; ETag, fields and include=user', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app, { name: 'Buyer' })
  const other = await signedIn(app)
  const admin = await adminToken(app)
  const [pen] = await stockUp(app, [{ price: 3, stock: 10 }]) as [number]
  const placed = body<Json>(await order(app, buyer.headers, [[pen, 2]]))
  const url = `/orders/${placed.id as number}`

  const mine = await call(app, 'GET', url, { auth: buyer.headers })
  t.equal(mine.statusCode, 200)
  t.same(body(mine), placed)
  t.equal((await call(app, 'GET', url, { auth: admin })).statusCode, 200, 'an admin reads any order')
  t.equal((await call(app, 'GET', url, { auth: other.headers })).statusCode, 403, 'another user may not')
  t.equal((await call(app, 'GET', url)).statusCode, 401)
  t.equal((await call(app, 'GET', '/orders/999', { auth: buyer.headers })).statusCode, 404)
  t.equal((await call(app, 'GET', '/orders/999', { auth: admin })).statusCode, 404)
  t.equal(body(await call(app, 'GET', '/orders/x', { auth: admin })).field, 'id')

  const etag = mine.headers.etag as string
  t.match(etag, /^"/)
  t.equal((await call(app, 'GET', url, { auth: buyer.headers, headers: { 'if-none-match': etag } })).statusCode, 304)

  t.same(body(await call(app, 'GET', url + '?fields=status,items', { auth: buyer.headers })),
    { id: placed.id, status: 'pending', items: placed.items })
  t.same(body(await call(app, 'GET', url + '?fields=total', { auth: buyer.headers })), { id: placed.id, total: 6 })
  const embedded = body<Json>(await call(app, 'GET', url + '?include=user&fields=total', { auth: buyer.headers }))
  t.same(embedded, { id: placed.id, total: 6, user: { id: buyer.id, name: 'Buyer', email: buyer.email, created_at: embedded.user.created_at } })
  for (const [query, field] of [['fields=price', 'fields'], ['include=products', 'include']] as const) {
    const res = await call(app, 'GET', `${url}?${query}`, { auth: buyer.headers })
    t.equal(res.statusCode, 400)
    t.equal(body(res).field, field)
  }
})

t.test('cancel: owner or admin, gives the stock back; cancelling twice is 409', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app)
  const other = await signedIn(app)
  const admin = await adminToken(app)
  const [pen, ink] = await stockUp(app, [{ price: 1, stock: 10 }, { price: 2, stock: 10 }]) as [number, number]
  const first = body<Json>(await order(app, buyer.headers, [[pen, 4], [ink, 1]]))
  const second = body<Json>(await order(app, buyer.headers, [[pen, 1]]))
  t.equal(await stockOf(app, pen), 5)

  t.equal((await call(app, 'POST', `/orders/${first.id as number}/cancel`)).statusCode, 401)
  t.equal((await call(app, 'POST', `/orders/${first.id as number}/cancel`, { auth: other.headers })).statusCode, 403)
  t.equal((await call(app, 'POST', '/orders/999/cancel', { auth: buyer.headers })).statusCode, 404)

  const cancelled = await call(app, 'POST', `/orders/${first.id as number}/cancel`, { auth: buyer.headers })
  t.equal(cancelled.statusCode, 200)
  t.same(body(cancelled), { ...first, status: 'cancelled' })
  t.equal(await stockOf(app, pen), 9, 'stock given back')
  t.equal(await stockOf(app, ink), 10)
  const row = await app.db.selectFrom('orders').select('status').where('id', '=', first.id).executeTakeFirstOrThrow()
  t.equal(row.status, 'cancelled')

  const again = await call(app, 'POST', `/orders/${first.id as number}/cancel`, { auth: buyer.headers })
  t.equal(again.statusCode, 409)
  t.match(body(again).error, /cancelled/)
  t.equal(await stockOf(app, pen), 9, 'and only once')

  const byAdmin = await call(app, 'POST', `/orders/${second.id as number}/cancel`, { auth: admin })
  t.equal(byAdmin.statusCode, 200)
  t.equal(await stockOf(app, pen), 10)
})

t.test('concurrent cancels of one order give the stock back once', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app)
  const [pen] = await stockUp(app, [{ price: 1, stock: 10 }]) as [number]
  const placed = body<Json>(await order(app, buyer.headers, [[pen, 6]]))
  const results = await Promise.all(Array.from({ length: 8 }, () => call(app, 'POST', `/orders/${placed.id as number}/cancel`, { auth: buyer.headers })))
  t.same(results.map((r) => r.statusCode).sort(), [200, 409, 409, 409, 409, 409, 409, 409])
  t.equal(await stockOf(app, pen), 10)
})

t.test('pay and ship (admin): pending → paid → shipped; illegal transitions are 409', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app)
  const admin = await adminToken(app)
  const [pen] = await stockUp(app, [{ price: 1, stock: 10 }]) as [number]
  const placed = body<Json>(await order(app, buyer.headers, [[pen, 2]]))
  const url = `/orders/${placed.id as number}`

  t.equal((await call(app, 'POST', url + '/pay', { auth: buyer.headers })).statusCode, 403, 'a user cannot mark an order paid')
  t.equal((await call(app, 'POST', url + '/ship', { auth: buyer.headers })).statusCode, 403)
  t.equal((await call(app, 'POST', url + '/pay')).statusCode, 401)
  t.equal((await call(app, 'POST', '/orders/999/pay', { auth: admin })).statusCode, 404)
  t.equal((await call(app, 'POST', url + '/ship', { auth: admin })).statusCode, 409, 'a pending order cannot ship')

  const paid = await call(app, 'POST', url + '/pay', { auth: admin })
  t.equal(paid.statusCode, 200)
  t.same(body(paid), { ...placed, status: 'paid' })
  t.equal((await call(app, 'POST', url + '/pay', { auth: admin })).statusCode, 409, 'paying twice')

  const shipped = await call(app, 'POST', url + '/ship', { auth: admin })
  t.equal(shipped.statusCode, 200)
  t.equal(body(shipped).status, 'shipped')
  const cancel = await call(app, 'POST', url + '/cancel', { auth: buyer.headers })
  t.equal(cancel.statusCode, 409, 'a shipped order cannot be cancelled')
  t.equal(await stockOf(app, pen), 8, 'and keeps its stock')
  t.equal((await app.db.selectFrom('orders').select('status').where('id', '=', placed.id).executeTakeFirstOrThrow()).status, 'shipped')

  const another = body<Json>(await order(app, buyer.headers, [[pen, 3]]))
  t.equal((await call(app, 'POST', `/orders/${another.id as number}/pay`, { auth: admin })).statusCode, 200)
  t.equal((await call(app, 'POST', `/orders/${another.id as number}/cancel`, { auth: buyer.headers })).statusCode, 200, 'a paid order can be cancelled')
  t.equal((await call(app, 'POST', `/orders/${another.id as number}/pay`, { auth: admin })).statusCode, 409, 'a cancelled order cannot be paid')
  t.equal(await stockOf(app, pen), 8)
})

t.test('GET /orders: users see their own, admins all; status, sort, paging', async (t) => {
  const app = await build(t)
  const ann = await signedIn(app)
  const bob = await signedIn(app)
  const admin = await adminToken(app)
  const [pen] = await stockUp(app, [{ price: 10, stock: 100 }]) as [number]
  for (const [who, quantity] of [[ann, 1], [bob, 2], [ann, 3], [bob, 4], [ann, 5]] as const) {
    t.equal((await order(app, who.headers, [[pen, quantity]])).statusCode, 201)
  }
  await call(app, 'POST', '/orders/3/pay', { auth: admin })
  const ids = async (auth: Auth, query = '') => {
    const res = await call(app, 'GET', '/orders?' + query, { auth })
    t.equal(res.statusCode, 200, query)
    return body<{ data: Json[] }>(res).data.map((o) => o.id as number)
  }
  t.same(await ids(ann.headers), [1, 3, 5])
  t.same(await ids(bob.headers), [2, 4])
  t.same(await ids(admin), [1, 2, 3, 4, 5])
  t.same(await ids(admin, 'status=paid'), [3])
  t.same(await ids(ann.headers, 'status=pending'), [1, 5])
  t.same(await ids(admin, 'sort=-total&limit=3'), [5, 4, 3])
  t.same(await ids(ann.headers, 'sort=total&order=desc'), [5, 3, 1])
  t.equal((await call(app, 'GET', '/orders')).statusCode, 401)

  const listed = body<{ data: Json[] }>(await call(app, 'GET', '/orders?limit=1', { auth: ann.headers })).data[0]
  t.same(listed?.items, [{ product_id: pen, quantity: 1, unit_price: 10 }], 'lists carry the items')
  t.same(body<{ data: Json[] }>(await call(app, 'GET', '/orders?fields=total&limit=2', { auth: admin })).data, [{ id: 1, total: 10 }, { id: 2, total: 20 }])

  const first = await call(app, 'GET', '/orders?limit=2&sort=-total', { auth: admin })
  t.match(first.headers.link, /rel="next"/)
  const cursor = body<{ pagination: { nextCursor: string } }>(first).pagination.nextCursor
  t.same(body<{ data: Json[] }>(await call(app, 'GET', `/orders?limit=2&sort=-total&cursor=${encodeURIComponent(cursor)}`, { auth: admin })).data.map((o) => o.id), [3, 2])
  const replayed = await call(app, 'GET', `/orders?limit=2&sort=-total&cursor=${encodeURIComponent(cursor)}`, { auth: ann.headers })
  t.equal(replayed.statusCode, 400, 'an admin\'s cursor does not page through a user\'s own list')
  t.same(body(await call(app, 'GET', '/orders?page=2&limit=2', { auth: admin })).meta, { page: 2, limit: 2, total: 5 })

  for (const [query, field] of [['sort=status', 'sort'], ['status=lost', 'status'], ['include=items', 'include'], ['fields=price', 'fields'], ['offset=-1', 'offset']] as const) {
    const res = await call(app, 'GET', '/orders?' + query, { auth: admin })
    t.equal(res.statusCode, 400, query)
    t.equal(body(res).field, field, query)
  }
})

t.test('GET /users/{id}/orders: self or admin; unknown user 404', async (t) => {
  const app = await build(t)
  const ann = await signedIn(app)
  const bob = await signedIn(app)
  const admin = await adminToken(app)
  const [pen] = await stockUp(app, [{ price: 1, stock: 10 }]) as [number]
  await order(app, ann.headers, [[pen, 1]])
  await order(app, bob.headers, [[pen, 1]])
  await order(app, ann.headers, [[pen, 1]])

  const own = await call(app, 'GET', `/users/${ann.id}/orders`, { auth: ann.headers })
  t.equal(own.statusCode, 200)
  t.same(body<{ data: Json[] }>(own).data.map((o) => [o.id, o.user_id]), [[1, ann.id], [3, ann.id]])
  t.same(body<{ data: Json[] }>(await call(app, 'GET', `/users/${bob.id}/orders`, { auth: admin })).data.map((o) => o.id), [2])
  t.same(body<{ data: Json[] }>(await call(app, 'GET', `/users/${ann.id}/orders?status=cancelled`, { auth: ann.headers })).data, [])
  t.equal((await call(app, 'GET', `/users/${bob.id}/orders`, { auth: ann.headers })).statusCode, 403)
  t.equal((await call(app, 'GET', `/users/${bob.id}/orders`)).statusCode, 401)
  t.equal((await call(app, 'GET', '/users/999/orders', { auth: admin })).statusCode, 404)
  t.equal((await call(app, 'GET', '/users/999/orders', { auth: await authHeaders(app, { id: 999 }) })).statusCode, 404, 'self, but no such user')
  t.equal(body(await call(app, 'GET', '/users/0/orders', { auth: admin })).field, 'id')
})

t.test('items and include=user cost one statement each for a whole page, never one per order', async (t) => {
  const { db, statements } = recordSql(await testDb())
  const app = await build(t, { db })
  const buyers = await Promise.all([signedIn(app), signedIn(app), signedIn(app)])
  const admin = await adminToken(app)
  const [pen, ink] = await stockUp(app, [{ price: 1, stock: 100 }, { price: 2, stock: 100 }]) as [number, number]
  for (let i = 0; i < 12; i++) await order(app, buyers[i % 3]?.headers, [[pen, 1], [ink, i + 1]])

  // Through HTTP too: three statements on orders, order_items and users, whatever the page size.
  for (const limit of [2, 10]) {
    statements.length = 0
    const res = await call(app, 'GET', `/orders?include=user&limit=${limit}`, { auth: admin })
    t.equal(res.statusCode, 200)
    const listed = body<{ data: Json[] }>(res).data
    t.equal(listed.length, limit)
    t.ok(listed.every((o) => o.user.id === o.user_id && o.items.length === 2))
    t.equal(statements.filter((s) => /"(orders|order_items|users)"/.test(s)).length, 3, `limit=${limit}: ${statements.join(' | ')}`)
  }
  statements.length = 0
  const totals = await call(app, 'GET', '/orders?fields=total&limit=5', { auth: admin })
  t.same(Object.keys(body<{ data: Json[] }>(totals).data[0] ?? {}).sort(), ['id', 'total'])
  t.same(statements.filter((s) => /order_items/.test(s)), [], 'no items asked, none loaded')
})

t.test('a retried POST /orders with the same Idempotency-Key takes the stock once', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app)
  const [pen] = await stockUp(app, [{ price: 1, stock: 10 }]) as [number]
  const payload = { items: [{ product_id: pen, quantity: 4 }] }
  const headers = { 'idempotency-key': 'order-once' }
  const first = await call(app, 'POST', '/orders', { auth: buyer.headers, payload, headers })
  const retry = await call(app, 'POST', '/orders', { auth: buyer.headers, payload, headers })
  t.equal(first.statusCode, 201)
  t.equal(retry.statusCode, 201)
  t.same(body(retry), body(first), 'the first answer again')
  t.equal(await stockOf(app, pen), 6)
  t.equal((await app.db.selectFrom('orders').select('id').execute()).length, 1)
  const other = await call(app, 'POST', '/orders', { auth: buyer.headers, payload: { items: [{ product_id: pen, quantity: 1 }] }, headers })
  t.equal(other.statusCode, 422, 'the same key with another body')
})

t.test('an idempotent order whose answer cannot be recorded is undone, and its retry orders once', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app)
  const [pen] = await stockUp(app, [{ price: 1, stock: 10 }]) as [number]
  const payload = { items: [{ product_id: pen, quantity: 4 }] }
  const headers = { 'idempotency-key': 'doomed' }
  // What a crash between the write and the record of its answer would leave: the record fails.
  const recordingWorks = await failRecording(t, app, 'doomed')

  const failed = await call(app, 'POST', '/orders', { auth: buyer.headers, payload, headers })
  t.equal(failed.statusCode, 500)
  t.equal(await stockOf(app, pen), 10, 'the stock the order took is back')
  t.equal((await app.db.selectFrom('orders').select('id').execute()).length, 0, 'and the order is gone with its record')

  await recordingWorks()
  const retry = await call(app, 'POST', '/orders', { auth: buyer.headers, payload, headers })
  t.equal(retry.statusCode, 201, 'the key is free again: the retry runs')
  const again = await call(app, 'POST', '/orders', { auth: buyer.headers, payload, headers })
  t.same(body(again), body(retry), 'and is recorded: the next retry gets its answer')
  t.equal(await stockOf(app, pen), 6)
  t.equal((await app.db.selectFrom('orders').select('id').execute()).length, 1, 'one order in all')

  // A refused order (not enough stock, refused inside the order's own transaction) frees its key too.
  const tooMany = { 'idempotency-key': 'too-many' }
  for (const attempt of ['first', 'retry']) {
    const refused = await call(app, 'POST', '/orders', { auth: buyer.headers, payload: { items: [{ product_id: pen, quantity: 7 }] }, headers: tooMany })
    t.equal(refused.statusCode, 422, `${attempt}: refused for the stock, not as a key in progress (409)`)
    t.match(body(refused), { error: /only 6 in stock/, field: 'items.0.quantity' })
  }
  t.equal(await stockOf(app, pen), 6)
})

t.test('deleting a user gives back the stock its open orders held (regression: stock was lost)', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app)
  const [pen, ink] = await stockUp(app, [{ price: 2, stock: 10 }, { price: 3, stock: 10 }]) as [number, number]
  for (const status of ['pending', 'paid', 'shipped'] as const) {
    const res = await call(app, 'POST', '/orders', { auth: buyer.headers, payload: { items: [{ product_id: pen, quantity: 2 }, { product_id: ink, quantity: 1 }] } })
    t.equal(res.statusCode, 201)
    if (status !== 'pending') await app.db.updateTable('orders').set({ status }).where('id', '=', body<{ id: number }>(res).id).execute()
  }
  t.equal(await stockOf(app, pen), 4)
  const deleted = await app.inject({ method: 'DELETE', url: `/api/v1/users/${buyer.id}`, headers: buyer.headers })
  t.equal(deleted.statusCode, 204)
  t.equal(await stockOf(app, pen), 8, 'pending and paid orders gave their 2 + 2 back; the shipped one did not')
  t.equal(await stockOf(app, ink), 9)
  t.equal((await app.db.selectFrom('orders').select('id').execute()).length, 0)
})
