import { sql } from 'kysely'
import { connect, type Db } from '../db/connect.js'
import { createProduct } from '../db/products.js'
import { seed, type SeedCounts } from '../db/seed.js'
import { createDatabase, databaseExists, dropDatabase, withDatabase } from './postgres.js'
import { ADMIN, BENCH_CATEGORY, type Settings } from './settings.js'

export interface Dataset {
  /** `postgres://…/<settings.database>` */
  url: string
  /** Null when the data set was already there and reused. */
  seededInMs: number | null
  counts: Omit<SeedCounts, 'orders'>
}

async function count (db: Db, table: 'users' | 'posts' | 'comments' | 'products'): Promise<number> {
  let query = db.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n'))
  // The bench's own rows (the administrator, the products ordered from) are not part of the seed.
  if (table === 'users') query = query.where('email', '!=', ADMIN.email)
  if (table === 'products') query = query.where('category', '!=', BENCH_CATEGORY)
  return Number((await query.executeTakeFirstOrThrow()).n)
}

async function seededCounts (db: Db): Promise<Dataset['counts']> {
  const [users, posts, comments, products] = await Promise.all(
    (['users', 'posts', 'comments', 'products'] as const).map(async (table) => count(db, table)))
  return { users: users ?? 0, posts: posts ?? 0, comments: comments ?? 0, products: products ?? 0 }
}

const sameCounts = (a: Dataset['counts'], b: SeedCounts) =>
  a.users === b.users && a.posts === b.posts && a.comments === b.comments && a.products === b.products

/**
 * Makes sure `settings.database` holds exactly the data set of `settings.counts`, seeded with the
 * seed command's own function; a database that already holds it is reused as it is, one that
 * holds something else is dropped and made again. Then adds the products the write cases order from.
 */
export async function prepareData (serverUrl: string, settings: Settings, log: (line: string) => void): Promise<Dataset> {
  const url = withDatabase(serverUrl, settings.database)
  if (!await databaseExists(serverUrl, settings.database)) await createDatabase(serverUrl, settings.database)
  let db = await connect({ databaseUrl: url, poolSize: 4 })
  let seededInMs: number | null = null
  try {
    let counts = await seededCounts(db)
    if (!sameCounts(counts, settings.counts)) {
      if (counts.users + counts.posts + counts.comments + counts.products > 0) {
        log(`database ${settings.database} holds another data set (${JSON.stringify(counts)}): making it again`)
        await db.destroy()
        await dropDatabase(serverUrl, settings.database)
        await createDatabase(serverUrl, settings.database)
        db = await connect({ databaseUrl: url, poolSize: 4 })
      }
      log(`seeding ${settings.database}: ${JSON.stringify(settings.counts)} (db/seed.ts)`)
      seededInMs = (await seed(db, settings.counts)).ms
      log(`seeded in ${(seededInMs / 1000).toFixed(1)} s`)
      counts = await seededCounts(db)
    } else {
      log(`reusing the data set in ${settings.database}: ${JSON.stringify(counts)}`)
    }
    await ensureBenchProducts(db, settings)
    return { url, seededInMs, counts }
  } finally {
    await db.destroy()
  }
}

async function ensureBenchProducts (db: Db, settings: Settings): Promise<void> {
  const existing = await db.selectFrom('products').select('id').where('category', '=', BENCH_CATEGORY).execute()
  for (let n = existing.length; n < settings.benchProducts; n++) {
    await createProduct(db, { name: `Bench stock ${n + 1}`, category: BENCH_CATEGORY, price: 9.99, stock: settings.benchStock })
  }
}

/** The products the write cases order from. */
export async function benchProductIds (db: Db): Promise<number[]> {
  const rows = await db.selectFrom('products').select('id').where('category', '=', BENCH_CATEGORY).orderBy('id').execute()
  return rows.map((row) => row.id)
}

export interface StockMark {
  /** Units in stock over all bench products. */
  stock: number
  /** The newest order's id: orders after it are the ones a case placed. */
  lastOrderId: number
}

const sleep = async (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Waits until no order has been written for 300 ms (at most 10 s): when a timed run stops, the
 * requests it cut off still place their orders on the server, after the run has ended.
 */
async function settled (db: Db): Promise<void> {
  const count = async () => Number((await sql<{ n: string }>`select count(*) as n from orders`.execute(db)).rows[0]?.n)
  let last = await count()
  for (let waited = 0; waited < 10_000; waited += 300) {
    await sleep(300)
    const now = await count()
    if (now === last) return
    last = now
  }
}

// One statement, so one snapshot: the stock and the orders are read at the same instant.
export async function markStock (db: Db): Promise<StockMark> {
  await settled(db)
  const { rows: [mark] } = await sql<{ stock: string, last: string }>`
    select (select coalesce(sum(stock), 0) from products where category = ${BENCH_CATEGORY}) as stock,
           (select coalesce(max(id), 0) from orders) as last`.execute(db)
  return { stock: Number(mark?.stock), lastOrderId: Number(mark?.last) }
}

export interface StockCheck {
  ordersPlaced: number
  unitsOrdered: number
  stockBefore: number
  stockAfter: number
  /** stockBefore − stockAfter equals the units of the orders placed since the mark. */
  conserved: boolean
}

/** Compares the stock taken since `mark` with the orders placed since then, from the database itself. */
export async function checkStock (db: Db, mark: StockMark): Promise<StockCheck> {
  await settled(db)
  const { rows: [placed] } = await sql<{ stock: string, orders: string, units: string | null }>`
    select (select coalesce(sum(stock), 0) from products where category = ${BENCH_CATEGORY}) as stock, placed.*
    from (select count(distinct items.order_id) as orders, sum(items.quantity) as units
          from order_items items join products on products.id = items.product_id
          where items.order_id > ${mark.lastOrderId} and products.category = ${BENCH_CATEGORY}) as placed`.execute(db)
  const after = { stock: Number(placed?.stock) }
  const unitsOrdered = Number(placed?.units ?? 0)
  return {
    ordersPlaced: Number(placed?.orders),
    unitsOrdered,
    stockBefore: mark.stock,
    stockAfter: after.stock,
    conserved: mark.stock - after.stock === unitsOrdered
  }
}
