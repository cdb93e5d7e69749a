import { sql } from 'kysely'
import { badRequest, conflict, refusedItem, unprocessable } from '../schema/errors.js'
import type { Db } from './connect.js'
import { inTransaction } from './transaction.js'
import { idArray } from './relations.js'
import type { OrderStatus } from './types.js'

export interface OrderItem {
  product_id: number
  quantity: number
  unit_price: number
}

export interface Order {
  id: number
  user_id: number
  status: OrderStatus
  total: number
  created_at: Date
  items: OrderItem[]
}

const orderColumns = ['id', 'user_id', 'status', 'total', 'created_at'] as const
const itemColumns = ['product_id', 'quantity', 'unit_price'] as const

/**
 * The items of every order in `orderIds`, in ONE statement (never one per order), by product id:
 * the orders' declared `items` (rules/orders.ts) are loaded with it.
 */
export async function itemsOf (db: Db, orderIds: readonly number[]): Promise<Map<number, OrderItem[]>> {
  const byOrder = new Map<number, OrderItem[]>(orderIds.map((id) => [id, []]))
  if (orderIds.length === 0) return byOrder
  const rows = await db.selectFrom('order_items')
    .select(['order_id', ...itemColumns])
    .where('order_id', '=', sql<number>`any(${idArray(orderIds)}::bigint[])`)
    .orderBy('order_id').orderBy('product_id')
    .execute()
  for (const { order_id: orderId, ...item } of rows) byOrder.get(orderId)?.push(item)
  return byOrder
}

export interface OrderLine {
  product_id: number
  quantity: number
}

/** numeric(12, 2) holds at most this many cents. */
const MAX_CENTS = 999_999_999_999

async function shortage (db: Db, line: OrderLine, index: number) {
  const product = await db.selectFrom('products').select('stock').where('id', '=', line.product_id).executeTakeFirst()
  if (product === undefined) return unprocessable(`product ${line.product_id} does not exist`, `items.${index}.product_id`)
  return unprocessable(`product ${line.product_id} has only ${product.stock} in stock`, `items.${index}.quantity`)
}

/** Places an order and takes its stock in ONE transaction of its own (or a savepoint of `db`'s): see `placeOrder`. */
export async function createOrder (db: Db, userId: number, lines: readonly OrderLine[]): Promise<Order> {
  return inTransaction(db, async (trx) => placeOrder(trx, userId, lines))
}

/**
 * Places an order and takes its stock inside the transaction `trx` (the orders' declared create runs
 * it in the create's). Each line takes stock with a single conditional UPDATE (`stock >= quantity`),
 * so concurrent orders can never oversell: the row lock makes a second taker wait and re-check.
 * Lines are taken in product id order, so two orders lock their products in the same order and
 * cannot deadlock. A product listed twice is 400.
 */
export async function placeOrder (trx: Db, userId: number, lines: readonly OrderLine[]): Promise<Order> {
  const positions = new Map<number, number>()
  lines.forEach((line, index) => {
    const first = positions.get(line.product_id)
    if (first !== undefined) {
      throw badRequest(`product ${line.product_id} is already in items.${first}; list each product once`, `items.${index}.product_id`)
    }
    positions.set(line.product_id, index)
  })
  const sorted = [...lines].sort((a, b) => a.product_id - b.product_id)
  // The user first (the lock the order's foreign key takes anyway), then the products: the
  // order in which deleting a user takes them, so that the two cannot deadlock.
  await trx.selectFrom('users').select('id').where('id', '=', userId).forKeyShare().execute()
  const items: OrderItem[] = []
  let cents = 0
  for (const line of sorted) {
    const taken = await trx.updateTable('products')
      .set({ stock: sql<number>`stock - ${line.quantity}` })
      .where('id', '=', line.product_id)
      .where('stock', '>=', line.quantity)
      .returning('price')
      .executeTakeFirst()
    if (taken === undefined) throw await shortage(trx, line, positions.get(line.product_id) ?? 0)
    items.push({ product_id: line.product_id, quantity: line.quantity, unit_price: taken.price })
    cents += Math.round(taken.price * 100) * line.quantity
  }
  if (cents > MAX_CENTS) throw unprocessable('the order total is too large', 'items')
  const order = await trx.insertInto('orders')
    .values({ user_id: userId, total: cents / 100 })
    .returning(orderColumns)
    .executeTakeFirstOrThrow()
  await trx.insertInto('order_items').values(items.map((item) => ({ order_id: order.id, ...item }))).execute()
  return { ...order, items }
}

/**
 * Takes, inside `trx`, the locks a batch of orders will take one order at a time, all at once and in
 * the order a single order takes them: the user's, then the products' in id order. Each order of the
 * batch then finds its products locked already, so that two batches (or a batch and single orders,
 * or a cancellation) never wait for each other in a cycle: without it, a batch whose first order
 * takes product 5 and whose second takes product 3 could deadlock with one that does the reverse.
 */
export async function lockForOrders (trx: Db, userId: number, lines: readonly OrderLine[]): Promise<void> {
  const ids = [...new Set(lines.map((line) => line.product_id))].sort((a, b) => a - b)
  await trx.selectFrom('users').select('id').where('id', '=', userId).forKeyShare().execute()
  if (ids.length > 0) await trx.selectFrom('products').select('id').where('id', '=', sql<number>`any(${idArray(ids)}::bigint[])`).orderBy('id').forUpdate().execute()
}

/** Numbers as one array parameter, in order and repeats kept (`idArray` keeps each id once). */
const list = (values: readonly number[]): string => `{${values.join(',')}}`

/**
 * Places a batch of orders of one user inside `trx` (the orders' `create.runMany`), as `placeOrder`
 * places each, in four statements whatever their number: the user and every product the batch takes
 * locked at once (`lockForOrders`: in id order, as one order takes them), the stock of every product
 * taken in one update, the orders and their items inserted in one statement each. The orders are
 * served in the order given, each from what the ones before it left: the first that cannot be (a
 * product listed twice, unknown, or short) refuses the batch, named (`[3].items.0.quantity`).
 */
export async function placeOrders (trx: Db, userId: number, orders: ReadonlyArray<readonly OrderLine[]>): Promise<Order[]> {
  orders.forEach((lines, index) => {
    const seen = new Map<number, number>()
    lines.forEach((line, at) => {
      const first = seen.get(line.product_id)
      if (first !== undefined) throw refusedItem(index, badRequest(`product ${line.product_id} is already in items.${first}; list each product once`, `items.${at}.product_id`))
      seen.set(line.product_id, at)
    })
  })
  const lines = orders.flat()
  await lockForOrders(trx, userId, lines)
  const ids = [...new Set(lines.map((line) => line.product_id))]
  const found = await trx.selectFrom('products').select(['id', 'stock', 'price']).where('id', '=', sql<number>`any(${idArray(ids)}::bigint[])`).execute()
  const products = new Map(found.map((product) => [Number(product.id), { stock: product.stock, price: product.price }]))
  const placed = orders.map((lines, index) => {
    const items: OrderItem[] = []
    let cents = 0
    // In product id order, as `placeOrder` takes them: the same line is the one found short.
    for (const line of [...lines].sort((a, b) => a.product_id - b.product_id)) {
      const at = lines.indexOf(line)
      const product = products.get(line.product_id)
      if (product === undefined) throw refusedItem(index, unprocessable(`product ${line.product_id} does not exist`, `items.${at}.product_id`))
      if (product.stock < line.quantity) throw refusedItem(index, unprocessable(`product ${line.product_id} has only ${product.stock} in stock`, `items.${at}.quantity`))
      product.stock -= line.quantity
      items.push({ product_id: line.product_id, quantity: line.quantity, unit_price: product.price })
      cents += Math.round(product.price * 100) * line.quantity
    }
    if (cents > MAX_CENTS) throw refusedItem(index, unprocessable('the order total is too large', 'items'))
    return { items, total: cents / 100 }
  })
  // What every product gives, in one statement; the products are locked, so their stock is what was read.
  const taken = [...products.entries()]
  await sql`update products set stock = taken.stock from unnest(${list(taken.map(([id]) => id))}::bigint[], ${list(taken.map(([, { stock }]) => stock))}::int[]) as taken (id, stock) where products.id = taken.id`.execute(trx)
  // Ids come from the sequence in the order unnest gives the rows: sorted, they are the orders' order.
  const inserted = await sql<Omit<Order, 'items'>>`insert into orders (user_id, total) select ${userId}, total from unnest(${list(placed.map(({ total }) => total))}::numeric[]) with ordinality as given (total, n) order by n returning ${sql.join(orderColumns.map((column) => sql.ref(column)))}`.execute(trx)
  const rows = [...inserted.rows].sort((a, b) => Number(a.id) - Number(b.id))
  const items = placed.flatMap(({ items }, index) => items.map((item) => ({ order_id: Number(rows[index]?.id), ...item })))
  await sql`insert into order_items (order_id, product_id, quantity, unit_price) select * from unnest(${list(items.map((item) => item.order_id))}::bigint[], ${list(items.map((item) => item.product_id))}::bigint[], ${list(items.map((item) => item.quantity))}::int[], ${list(items.map((item) => item.unit_price))}::numeric[])`.execute(trx)
  return rows.map((row, index) => ({ ...row, items: placed[index]?.items ?? [] }))
}

const transitions = {
  pay: { to: 'paid', from: ['pending'] },
  ship: { to: 'shipped', from: ['paid'] },
  cancel: { to: 'cancelled', from: ['pending', 'paid'] }
} as const satisfies Record<string, { to: OrderStatus, from: readonly OrderStatus[] }>

export type Transition = keyof typeof transitions

/**
 * Moves an order along `pending → paid → shipped` or to `cancelled`, in one transaction of its own (or
 * a savepoint of `db`'s): the order locked, then `moveOrder`. Undefined when there is no such order.
 */
export async function transitionOrder (db: Db, id: number, transition: Transition): Promise<Order | undefined> {
  return inTransaction(db, async (trx) => {
    const row = await trx.selectFrom('orders').select(orderColumns).where('id', '=', id).forUpdate().executeTakeFirst()
    if (row === undefined) return undefined
    return moveOrder(trx, { ...row, items: (await itemsOf(trx, [id])).get(id) ?? [] }, transition)
  })
}

/**
 * Moves `order`, locked in `trx` as it is (the orders' declared actions lock it), along its
 * transitions; 409 when the move is illegal from its status. Cancelling gives the stock back in the
 * same transaction.
 */
export async function moveOrder (trx: Db, order: Pick<Order, 'id' | 'status' | 'items'>, transition: Transition): Promise<Order> {
  const { to, from } = transitions[transition]
  if (!(from as readonly OrderStatus[]).includes(order.status)) throw conflict(`cannot ${transition} an order that is ${order.status}`)
  const moved = await trx.updateTable('orders').set({ status: to }).where('id', '=', order.id).returning(orderColumns).executeTakeFirstOrThrow()
  const { items } = order
  if (to === 'cancelled' && items.length > 0) {
    // Lock the products in id order first, as placing an order does, so that the two cannot deadlock.
    await trx.selectFrom('products').select('id').where('id', 'in', items.map((i) => i.product_id)).orderBy('id').forUpdate().execute()
    await trx.updateTable('products')
      .from('order_items')
      .set((eb) => ({ stock: eb('products.stock', '+', eb.ref('order_items.quantity')) }))
      .whereRef('products.id', '=', 'order_items.product_id')
      .where('order_items.order_id', '=', order.id)
      .execute()
  }
  return { ...moved, items }
}
