// The orders' declaration (rules/orders.ts) in the query style: what REST serves
// (test/routes/orders.test.ts), GraphQL serves from the same declaration and rules.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { adminToken, apiClient, body, build, errorCodes, graphql, signedIn, testDb } from '../helpers/app.js'
import { recordSql } from '../helpers/sql-log.js'

async function stockUp (app: FastifyInstance, stock: number): Promise<number> {
  const row = await app.db.insertInto('products').values({ name: 'Pen', category: 'office', price: 2.5, stock }).returning('id').executeTakeFirstOrThrow()
  return row.id
}

const stockOf = async (app: FastifyInstance, id: number): Promise<number> =>
  (await app.db.selectFrom('products').select('stock').where('id', '=', id).executeTakeFirstOrThrow()).stock

const fields = 'id userId status total createdAt items { productId quantity unitPrice }'

t.test('orders in GraphQL: placed by the caller, read by their owner or an administrator, moved by the same rules', async (t) => {
  const app = await build(t)
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const admin = await adminToken(app)
  const pen = await stockUp(app, 10)
  const place = (quantity: number, headers?: Record<string, string>) =>
    graphql(app, `mutation { createOrder(input: { items: [{ productId: "${pen}", quantity: ${quantity} }] }) { ${fields} } }`, headers === undefined ? {} : { headers })

  const placed = await place(3, ann.headers)
  const order = placed.data?.createOrder as { id: string }
  t.match(order, { userId: String(ann.id), status: 'pending', total: 7.5, createdAt: String, items: [{ productId: String(pen), quantity: 3, unitPrice: 2.5 }] })
  t.equal(await stockOf(app, pen), 7, 'the stock is taken')
  t.same(body(await apiClient(app, ann.headers)('GET', `/orders/${order.id}`)).items, [{ product_id: pen, quantity: 3, unit_price: 2.5 }], 'REST reads what GraphQL placed')
  t.same(errorCodes(await place(1)), ['UNAUTHENTICATED'])
  t.match((await place(8, ann.headers)).errors, [{ extensions: { field: 'items.0.quantity' } }], 'more than the stock is refused on the item, as in REST')
  t.match((await graphql(app, 'mutation { createOrder(input: { items: [] }) { id } }', { headers: ann.headers })).errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'items' } }])
  t.match((await graphql(app, 'mutation { createOrder(input: { items: [{ productId: "x", quantity: 1 }] }) { id } }', { headers: ann.headers })).errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'productId' } }])
  await place(1, bob.headers)

  const ids = async (query: string, headers: Record<string, string>) => {
    const { data, errors } = await graphql(app, `{ list: ${query} { id } }`, { headers })
    t.equal(errors, undefined, query)
    return (data?.list as Array<{ id: string }>).map(({ id }) => Number(id))
  }
  t.same(await ids('orders', ann.headers), [1], 'a user lists their own')
  t.same(await ids('orders', admin), [1, 2], 'an administrator all of them')
  t.same(await ids('orders(status: paid)', admin), [])
  const connection = await graphql(app, '{ ordersConnection(first: 1) { edges { node { id user { name } } } pageInfo { hasNextPage } } }', { headers: admin })
  t.same(connection.data, { ordersConnection: { edges: [{ node: { id: '1', user: { name: 'Ann' } } }], pageInfo: { hasNextPage: true } } })
  t.same(errorCodes(await graphql(app, `{ order(id: "${order.id}") { id } }`, { headers: bob.headers })), ['FORBIDDEN'], 'another user\'s order')
  t.same((await graphql(app, `{ order(id: "${order.id}") { status } }`, { headers: admin })).data, { order: { status: 'pending' } })

  const move = (action: string, headers: Record<string, string>) => graphql(app, `mutation { ${action}Order(id: "${order.id}") { status items { quantity } } }`, { headers })
  t.same(errorCodes(await move('pay', ann.headers)), ['FORBIDDEN'], 'only an administrator marks an order paid')
  t.same(errorCodes(await move('cancel', bob.headers)), ['FORBIDDEN'], 'nor cancels another user\'s')
  t.same((await move('pay', admin)).data, { payOrder: { status: 'paid', items: [{ quantity: 3 }] } })
  t.same((await move('cancel', ann.headers)).data, { cancelOrder: { status: 'cancelled', items: [{ quantity: 3 }] } })
  t.equal(await stockOf(app, pen), 9, 'the stock is given back')
  t.same(errorCodes(await move('ship', admin)), ['CONFLICT'], 'a cancelled order does not ship')
  t.same(errorCodes(await move('cancel', ann.headers)), ['CONFLICT'])
  t.equal(await stockOf(app, pen), 9, 'and only once')
})

t.test('orders are never changed nor deleted but by their actions: no route, mutation or OpenAPI entry', async (t) => {
  const app = await build(t)
  const admin = await adminToken(app)
  const pen = await stockUp(app, 10)
  const asAdmin = apiClient(app, admin)
  t.equal((await asAdmin('POST', '/orders', { items: [{ product_id: pen, quantity: 1 }] })).statusCode, 201)
  for (const method of ['PUT', 'PATCH', 'DELETE'] as const) t.equal((await asAdmin(method, '/orders/1', { status: 'paid' })).statusCode, 404, method)
  t.same(errorCodes(await graphql(app, 'mutation { updateOrder(id: "1", input: {}) { id } }', { headers: admin })), ['GRAPHQL_VALIDATION_FAILED'])
  t.same(errorCodes(await graphql(app, 'mutation { deleteOrder(id: "1") }', { headers: admin })), ['GRAPHQL_VALIDATION_FAILED'])
  const doc = body<{ paths: Record<string, Record<string, unknown>> }>(await app.inject({ method: 'GET', url: '/openapi.json' }))
  t.same(Object.keys(doc.paths['/api/v1/orders/{id}'] ?? {}), ['get'])
  t.ok(doc.paths['/api/v1/orders/{id}/cancel']?.post, 'the actions are')
})

t.test('a nested query below orders runs three statements, whatever the number of orders', async (t) => {
  const { db, statements } = recordSql(await testDb())
  const app = await build(t, { db })
  const buyers = await Promise.all([signedIn(app), signedIn(app)])
  const admin = await adminToken(app)
  const pen = await stockUp(app, 100)
  for (let i = 0; i < 6; i++) t.equal((await apiClient(app, buyers[i % 2]?.headers)('POST', '/orders', { items: [{ product_id: pen, quantity: 1 }] })).statusCode, 201)
  for (const limit of [2, 6]) {
    statements.length = 0
    const { data } = await graphql(app, `{ orders(limit: ${limit}) { total items { productId } user { name posts { title } } } }`, { headers: admin })
    t.equal((data?.orders as unknown[]).length, limit)
    t.equal(statements.filter((s) => /"(orders|order_items|users|posts)"/.test(s)).length, 3, `limit ${limit}: the orders, their items, then their users and the users' posts in one statement`)
  }
  statements.length = 0
  const { data } = await graphql(app, '{ orders { total } one: order(id: "1") { status } ordersConnection { edges { node { id } } } }', { headers: admin })
  t.equal((data?.orders as unknown[]).length, 6)
  t.equal(statements.filter((s) => /order_items/.test(s)).length, 0, 'items not selected, not loaded')
})

t.test('an administrator lists one user\'s orders in both styles; anyone else only ever their own', async (t) => {
  const app = await build(t)
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const admin = await adminToken(app)
  const pen = await stockUp(app, 10)
  const place = async (headers: { authorization: string }) => body<{ id: number }>(await apiClient(app, headers)('POST', '/orders', { items: [{ product_id: pen, quantity: 1 }] })).id
  const annsOrder = await place(ann.headers)
  await place(bob.headers)
  const listed = async (query: string, headers: { authorization: string }) => {
    const { data, errors } = await graphql(app, `{ list: ${query} { id } }`, { headers })
    t.equal(errors, undefined, query)
    return (data?.list as Array<{ id: string }>).map(({ id }) => Number(id))
  }
  const edges = async (query: string, headers: { authorization: string }) => {
    const { data } = await graphql(app, `{ list: ${query} { edges { node { id } } } }`, { headers })
    return (data?.list as { edges: Array<{ node: { id: string } }> }).edges.map(({ node }) => Number(node.id))
  }
  t.same(await listed(`orders(userId: "${ann.id}")`, admin), [annsOrder], 'GraphQL: an administrator, one user\'s')
  t.same(await edges(`ordersConnection(userId: "${ann.id}")`, admin), [annsOrder], 'and as a connection')
  t.same(body<{ data: Array<{ id: number }> }>(await apiClient(app, admin)('GET', `/orders?user_id=${ann.id}`)).data.map(({ id }) => id), [annsOrder], 'REST: the same filter')
  t.same(body<{ data: Array<{ id: number }> }>(await apiClient(app, admin)('GET', `/users/${ann.id}/orders`)).data.map(({ id }) => id), [annsOrder], 'and the user\'s own path')
  t.same(await listed(`orders(userId: "${ann.id}")`, bob.headers), [], 'another user asking for Ann\'s gets none of hers')
  t.same(body<{ data: unknown[] }>(await apiClient(app, bob.headers)('GET', `/orders?user_id=${ann.id}`)).data, [], 'in REST too')
  t.same(await listed(`orders(userId: "${ann.id}")`, ann.headers), [annsOrder], 'her own')
})
