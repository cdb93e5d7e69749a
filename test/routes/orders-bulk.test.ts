// A batch of orders (CONTRACT §14, issue 42, 4): an array POST /orders places every order in one
// transaction, and conserves stock exactly as single orders do, concurrent batches and single orders
// included (run it on a real server: DATABASE_URL; the embedded database runs one transaction at a time).
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { body, build, errorCodes, graphql, signedIn } from '../helpers/app.js'

type Auth = { authorization: string }
type Lines = Array<[number, number]>

async function stockUp (app: FastifyInstance, products: Array<{ price: number, stock: number }>): Promise<number[]> {
  const rows = await app.db.insertInto('products')
    .values(products.map((p, i) => ({ name: `Product ${i + 1}`, category: 'test', price: p.price, stock: p.stock })))
    .returning('id').execute()
  return rows.map((r) => r.id)
}

const stocks = async (app: FastifyInstance, ids: readonly number[]): Promise<number[]> =>
  Promise.all(ids.map(async (id) => (await app.db.selectFrom('products').select('stock').where('id', '=', id).executeTakeFirstOrThrow()).stock))

const soldOf = async (app: FastifyInstance, ids: readonly number[]): Promise<number[]> =>
  Promise.all(ids.map(async (id) => Number((await app.db.selectFrom('order_items').select((eb) => eb.fn.sum<number>('quantity').as('n')).where('product_id', '=', id).executeTakeFirstOrThrow()).n ?? 0)))

const itemsOf = (lines: Lines) => ({ items: lines.map(([id, quantity]) => ({ product_id: id, quantity })) })

const post = (app: FastifyInstance, auth: Auth, payload: object): Promise<LightMyRequestResponse> =>
  app.inject({ method: 'POST', url: '/api/v1/orders', headers: auth, payload })

t.test('an array POST /orders places every order in one transaction; a refused one leaves the stock as it was', async (t) => {
  const app = await build(t)
  const buyer = await signedIn(app)
  const [pen, ink] = await stockUp(app, [{ price: 2.5, stock: 10 }, { price: 4, stock: 3 }]) as [number, number]

  const placed = await post(app, buyer.headers, [itemsOf([[pen, 2]]), itemsOf([[ink, 1], [pen, 1]])])
  t.equal(placed.statusCode, 201)
  t.match(body<{ data: unknown[] }>(placed).data, [
    { user_id: buyer.id, status: 'pending', total: 5, items: [{ product_id: pen, quantity: 2, unit_price: 2.5 }] },
    { user_id: buyer.id, status: 'pending', total: 6.5, items: [{ product_id: pen, quantity: 1 }, { product_id: ink, quantity: 1 }] }
  ], 'each order as one create answers it, in the order given')
  t.same(await stocks(app, [pen, ink]), [7, 2])

  const short = await post(app, buyer.headers, [itemsOf([[pen, 1]]), itemsOf([[pen, 1]]), itemsOf([[ink, 3]])])
  t.same([short.statusCode, body(short).field], [422, '[2].items.0.quantity'], 'the item and the line that could not be served')
  const twice = await post(app, buyer.headers, [itemsOf([[pen, 1], [pen, 1]])])
  t.same([twice.statusCode, body(twice).field], [400, '[0].items.1.product_id'])
  t.same(await stocks(app, [pen, ink]), [7, 2], 'nothing taken by a refused batch')
  t.equal((await app.db.selectFrom('orders').select('id').execute()).length, 2)

  const made = await graphql(app, `mutation { createOrders(inputs: [{items: [{productId: "${pen}", quantity: 1}]}, {items: [{productId: "${ink}", quantity: 2}]}]) { total items { productId quantity } } }`, { headers: buyer.headers })
  t.same(made.data, { createOrders: [{ total: 2.5, items: [{ productId: String(pen), quantity: 1 }] }, { total: 8, items: [{ productId: String(ink), quantity: 2 }] }] })
  const refused = await graphql(app, `mutation { createOrders(inputs: [{items: [{productId: "${pen}", quantity: 1}]}, {items: [{productId: "${ink}", quantity: 1}]}]) { id } }`, { headers: buyer.headers })
  t.same([errorCodes(refused), refused.errors?.[0]?.extensions?.field], [['BAD_USER_INPUT'], '[1].items.0.quantity'])
  t.same(await stocks(app, [pen, ink]), [6, 0])
})

t.test('concurrent batches and single orders on the same products conserve stock exactly, without deadlocks', async (t) => {
  const app = await build(t)
  const buyers = await Promise.all([signedIn(app), signedIn(app), signedIn(app)])
  const initial = 25
  const products = await stockUp(app, Array.from({ length: 4 }, (_, i) => ({ price: i + 1, stock: initial })))
  const at = (i: number): number => products[i % products.length] as number
  // Batches whose orders take the products in crossing orders (one takes 1 then 0, the next 0 then 3…),
  // and single orders of several products in descending id order: what deadlocks when a batch locks as it goes.
  const batches = Array.from({ length: 12 }, (_, b) => Array.from({ length: 4 }, (_, o) => itemsOf(o % 2 === 0 ? [[at(b + o + 1), 1], [at(b + o), 1]] : [[at(b + o + 3), 2]])))
  const singles = Array.from({ length: 24 }, (_, s) => itemsOf([[at(3 - (s % 2)), 1], [at(1 - (s % 2)), 1]]))
  const requests = [
    ...batches.map((batch, b) => ({ batch, res: post(app, (buyers[b % 3] as { headers: Auth }).headers, batch) })),
    ...singles.map((single, s) => ({ batch: [single], res: post(app, (buyers[s % 3] as { headers: Auth }).headers, single) }))
  ]
  const answered = await Promise.all(requests.map(async ({ batch, res }) => ({ batch, res: await res })))
  const codes = answered.map(({ res }) => res.statusCode)
  t.same([...new Set(codes)].filter((code) => code !== 201 && code !== 422), [], 'every request placed or refused for its stock: no deadlock (409), no 500')
  t.ok(codes.includes(201) && codes.includes(422), `some placed, some refused for want of stock (${codes.filter((c) => c === 201).length} placed)`)

  const placedOrders = answered.filter(({ res }) => res.statusCode === 201).reduce((n, { batch }) => n + batch.length, 0)
  t.equal((await app.db.selectFrom('orders').select('id').execute()).length, placedOrders, 'a refused batch placed none of its orders')
  const stock = await stocks(app, products)
  const sold = await soldOf(app, products)
  t.same(stock.map((left, i) => left + (sold[i] as number)), products.map(() => initial), 'stock + sold is what there was, for every product')
  t.ok(stock.every((left) => left >= 0))
})
