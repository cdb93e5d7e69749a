// CONTRACT §11: deleting a user and cancelling one of their orders at the same moment give the
// stock back exactly once. Both give back what an open order holds; without locking the orders it
// reads, the deletion also counted an order whose cancel was under way (uncommitted) as open.
// PGlite runs one transaction at a time, so the race needs a real PostgreSQL server.
import Fastify from 'fastify'
import t from 'tap'
import tandem from '../../app/tandem.js'
import type { Db } from '../../db/connect.js'
import { createOrder, transitionOrder, type Order } from '../../db/orders.js'
import { createProduct } from '../../db/products.js'
import type { AccessUser } from '../../plugins/auth.js'
import { users } from '../../rules/users.js'
import { TandemError } from '../../schema/errors.js'
import { TEST_SECRET } from '../helpers/app.js'
import { serverUrl, throwAwayDb, type Test } from '../helpers/database.js'

const skip = serverUrl() === undefined
  ? 'needs a real PostgreSQL (set DATABASE_URL): PGlite runs one transaction at a time, so these races cannot happen on it'
  : false

const ROUNDS = 30
const STOCK = 25
const HELD = 3

let serial = 0
const admin: AccessUser = { sub: 0, role: 'admin', jti: 'racer', exp: Math.floor(Date.now() / 1000) + 3600, iat: 0, ver: 0 }

/**
 * A database of its own, and users made and deleted through the users' served resource, as both
 * styles make and delete them (its hooks give the stock back).
 */
async function racing (t: Test) {
  const db = await throwAwayDb(t)
  const app = Fastify({ logger: false })
  await app.register(tandem, { db, jwtSecret: TEST_SECRET, overloadMaxEventLoopDelay: 0 })
  t.teardown(() => app.close())
  await app.ready()
  const served = app.tandemResources(users)
  return {
    db,
    user: async () => await served.create(undefined, { name: 'Racer', email: `racer-${process.pid}-${++serial}@example.com` }),
    deleteUser: async (id: number) => await served.remove(admin, id) !== undefined
  }
}

const product = async (db: Db) => (await createProduct(db, { name: `Part ${++serial}`, category: 'race', price: 1.5, stock: STOCK })).id

async function stockOf (db: Db, id: number): Promise<number> {
  return (await db.selectFrom('products').select('stock').where('id', '=', id).executeTakeFirstOrThrow()).stock
}

/** What a cancel racing the deletion of its order may answer: done, no such order (404), or 409. */
function cancelOutcome (result: PromiseSettledResult<Order | undefined>): string | undefined {
  if (result.status === 'fulfilled') return undefined
  const error: unknown = result.reason
  return error instanceof TandemError && error.statusCode === 409 ? undefined : `cancel failed: ${String(error)}`
}

/** How the cancels ended, to show that both sides of the race were run. */
function tally (counts: Map<string, number>, result: PromiseSettledResult<Order | undefined>): void {
  const outcome = result.status === 'rejected' ? 'refused' : result.value === undefined ? 'no such order' : 'cancelled'
  counts.set(outcome, (counts.get(outcome) ?? 0) + 1)
}

function failed (result: PromiseSettledResult<unknown>, what: string): string | undefined {
  return result.status === 'rejected' ? `${what} failed: ${String(result.reason)}` : undefined
}

t.test('deleting a user while one of their orders is cancelled gives the stock back once', { skip }, async (t) => {
  const { db, user, deleteUser } = await racing(t)
  const wrong: string[] = []
  const cancels = new Map<string, number>()
  for (let round = 0; round < ROUNDS; round++) {
    const buyer = await user()
    // Two products, listed out of id order, and a second open order holding one of them.
    const [low, high] = [await product(db), await product(db)]
    const order = await createOrder(db, buyer.id, [{ product_id: high, quantity: HELD }, { product_id: low, quantity: HELD }])
    await createOrder(db, buyer.id, [{ product_id: low, quantity: 1 }])
    const racers = [deleteUser(buyer.id), transitionOrder(db, order.id, 'cancel')] as const
    const [deleted, cancelled] = await Promise.allSettled(racers)
    tally(cancels, cancelled)
    const problems = [
      failed(deleted, 'delete'),
      deleted.status === 'fulfilled' && !deleted.value ? 'delete found no user' : undefined,
      cancelOutcome(cancelled)
    ].filter((p) => p !== undefined)
    const stock = [await stockOf(db, low), await stockOf(db, high)]
    if (deleted.status === 'fulfilled' && stock.some((s) => s !== STOCK)) problems.push(`stock ${stock.join(', ')} instead of ${STOCK} each`)
    if (problems.length > 0) wrong.push(`round ${round}: ${problems.join('; ')}`)
  }
  t.comment(`cancels: ${[...cancels].map(([outcome, n]) => `${n} ${outcome}`).join(', ')}`)
  t.same(wrong, [], `every one of ${ROUNDS} rounds gave the stock back exactly once`)
})

t.test('...while another user orders the same products: no error, and the stock adds up', { skip }, async (t) => {
  const { db, user, deleteUser } = await racing(t)
  const wrong: string[] = []
  const cancels = new Map<string, number>()
  for (let round = 0; round < ROUNDS; round++) {
    const [buyer, other] = [await user(), await user()]
    const [low, high] = [await product(db), await product(db)]
    const order = await createOrder(db, buyer.id, [{ product_id: low, quantity: HELD }, { product_id: high, quantity: HELD }])
    const [deleted, cancelled, placed] = await Promise.allSettled([
      deleteUser(buyer.id),
      transitionOrder(db, order.id, 'cancel'),
      createOrder(db, other.id, [{ product_id: high, quantity: 2 }, { product_id: low, quantity: 1 }])
    ])
    tally(cancels, cancelled)
    const problems = [
      failed(deleted, 'delete'),
      deleted.status === 'fulfilled' && !deleted.value ? 'delete found no user' : undefined,
      cancelOutcome(cancelled),
      failed(placed, "the other user's order")
    ].filter((p) => p !== undefined)
    const expected = placed.status === 'fulfilled' ? [STOCK - 1, STOCK - 2] : [STOCK, STOCK]
    const stock = [await stockOf(db, low), await stockOf(db, high)]
    if (deleted.status === 'fulfilled' && stock.join() !== expected.join()) problems.push(`stock ${stock.join(', ')} instead of ${expected.join(', ')}`)
    if (problems.length > 0) wrong.push(`round ${round}: ${problems.join('; ')}`)
  }
  t.comment(`cancels: ${[...cancels].map(([outcome, n]) => `${n} ${outcome}`).join(', ')}`)
  t.same(wrong, [], `every one of ${ROUNDS} rounds: no unexpected error, and stock = start − the other user's order`)
})

t.test('regression: a user ordering while being deleted deadlocked with the deletion; now one waits for the other', { skip }, async (t) => {
  const { db, user, deleteUser } = await racing(t)
  const wrong: string[] = []
  let placedFirst = 0
  for (let round = 0; round < ROUNDS; round++) {
    const buyer = await user()
    const [low, high] = [await product(db), await product(db)]
    await createOrder(db, buyer.id, [{ product_id: low, quantity: HELD }])
    const [deleted, placed] = await Promise.allSettled([
      deleteUser(buyer.id),
      createOrder(db, buyer.id, [{ product_id: high, quantity: 2 }, { product_id: low, quantity: 1 }])
    ])
    if (placed.status === 'fulfilled') placedFirst++
    // Placed first, the order is open when the deletion comes and its stock goes back with it;
    // placed second, it names a user who is gone and is refused. Either way nothing is held.
    const problems = [
      failed(deleted, 'delete'),
      placed.status === 'rejected' && !(placed.reason instanceof TandemError || /foreign key/.test(String(placed.reason))) ? `order failed: ${String(placed.reason)}` : undefined
    ].filter((p) => p !== undefined)
    const stock = [await stockOf(db, low), await stockOf(db, high)]
    if (stock.some((s) => s !== STOCK)) problems.push(`stock ${stock.join(', ')} instead of ${STOCK} each`)
    if (problems.length > 0) wrong.push(`round ${round}: ${problems.join('; ')}`)
  }
  t.comment(`orders placed before the deletion: ${placedFirst} of ${ROUNDS}`)
  t.same(wrong, [], `every one of ${ROUNDS} rounds: no deadlock, and all the stock back`)
})
