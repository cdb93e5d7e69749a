import { sql, type RawBuilder } from 'kysely'
import t from 'tap'
import type { Db } from '../../db/connect.js'
import { loadDemoData } from '../../db/demo.js'
import { seed, type SeedCounts } from '../../db/seed.js'
import { throwAwayDb } from '../helpers/database.js'

const tables = ['users', 'profiles', 'posts', 'comments', 'products', 'orders', 'order_items'] as const
type Table = typeof tables[number]
/** A subtest's `t`. */
type Test = Parameters<Parameters<typeof t.test>[0]>[0]

async function rowCounts (db: Db): Promise<Record<Table, number>> {
  const counts = {} as Record<Table, number>
  for (const table of tables) {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(db)
    counts[table] = rows[0]?.n ?? -1
  }
  return counts
}

async function scalar (db: Db, query: RawBuilder<{ n: number }>): Promise<number> {
  const { rows } = await query.execute(db)
  return rows[0]?.n ?? -1
}

/** The invariants every seeded or demo database must keep. */
async function checkConsistency (t: Test, db: Db): Promise<void> {
  const orphans = {
    'profiles.user_id': sql<{ n: number }>`select count(*)::int as n from profiles p left join users u on u.id = p.user_id where u.id is null`,
    'posts.author_id': sql<{ n: number }>`select count(*)::int as n from posts p left join users u on u.id = p.author_id where u.id is null`,
    'comments.post_id': sql<{ n: number }>`select count(*)::int as n from comments c left join posts p on p.id = c.post_id where p.id is null`,
    'comments.author_id': sql<{ n: number }>`select count(*)::int as n from comments c left join users u on u.id = c.author_id where u.id is null`,
    'orders.user_id': sql<{ n: number }>`select count(*)::int as n from orders o left join users u on u.id = o.user_id where u.id is null`,
    'order_items.order_id': sql<{ n: number }>`select count(*)::int as n from order_items i left join orders o on o.id = i.order_id where o.id is null`,
    'order_items.product_id': sql<{ n: number }>`select count(*)::int as n from order_items i left join products p on p.id = i.product_id where p.id is null`
  }
  for (const [reference, query] of Object.entries(orphans)) {
    t.equal(await scalar(db, query), 0, `every ${reference} references an existing row`)
  }
  t.equal(await scalar(db, sql`select count(*)::int as n from users u where not exists (select 1 from profiles p where p.user_id = u.id)`),
    0, 'every user has a profile')
  t.equal(await scalar(db, sql`select count(*)::int as n from orders o where not exists (select 1 from order_items i where i.order_id = o.id)`),
    0, 'every order has items')
  t.equal(await scalar(db, sql`select count(*)::int as n from orders o
    where o.total <> (select sum(i.quantity * i.unit_price) from order_items i where i.order_id = o.id)`),
  0, 'every order total is the sum of its items')
  t.equal(await scalar(db, sql`select count(*)::int as n from order_items i join products p on p.id = i.product_id
    where i.unit_price <> p.price`), 0, 'unit prices are the product prices')
  t.equal(await scalar(db, sql`select count(*)::int as n from products where price < 1 or price > 500 or stock < 0 or stock > 1000`),
    0, 'prices and stock are in range')
}

/** Nothing happens before what it depends on existed. */
async function checkChronology (t: Test, db: Db): Promise<void> {
  t.equal(await scalar(db, sql`select count(*)::int as n from posts p join users u on u.id = p.author_id
    where p.created_at < u.created_at`), 0, 'posts come after their author joined')
  t.equal(await scalar(db, sql`select count(*)::int as n from comments c join posts p on p.id = c.post_id
    join users u on u.id = c.author_id where c.created_at < p.created_at or c.created_at < u.created_at`),
  0, 'comments come after their post and their author')
  t.equal(await scalar(db, sql`select count(*)::int as n from orders o join users u on u.id = o.user_id
    where o.created_at < u.created_at`), 0, 'orders come after their customer joined')
  t.equal(await scalar(db, sql`select count(*)::int as n from orders o join order_items i on i.order_id = o.id
    join products p on p.id = i.product_id where o.created_at < p.created_at`), 0, 'orders come after their products')
  t.equal(await scalar(db, sql`select count(*)::int as n from posts where updated_at <> created_at`), 0, 'posts are unedited')
}

const small: SeedCounts = { users: 50, posts: 200, comments: 500, products: 20, orders: 30 }

t.test('seed inserts exactly the rows asked for, all consistent', async (t) => {
  const db = await throwAwayDb(t, { poolSize: 4 })
  const report = await seed(db, small)
  t.match(report.inserted, { ...small, profiles: small.users })
  t.ok(report.inserted.order_items >= small.orders && report.inserted.order_items <= 3 * small.orders, '1-3 items per order')
  t.type(report.ms, 'number')

  const counts = await rowCounts(db)
  t.match(counts, { ...small, profiles: small.users, order_items: report.inserted.order_items })
  await checkConsistency(t, db)

  t.equal(await scalar(db, sql`select count(distinct status)::int as n from orders`) > 1, true, 'a mix of order statuses')
  t.equal(await scalar(db, sql`select count(distinct created_at)::int as n from posts`) > small.posts / 2, true,
    'created_at varies')
  t.equal(await scalar(db, sql`select count(*)::int as n from posts where created_at < now() - interval '366 days'`), 0,
    'created_at lies within the past year')
  await checkChronology(t, db)
  t.equal(await scalar(db, sql`select count(distinct category)::int as n from products`) > 1, true, 'several categories')
  t.equal(await scalar(db, sql`select count(*)::int as n from users where password_hash is not null`), 0, 'no passwords')

  // Seeding again adds as many rows, with fresh emails, referencing old and new rows alike.
  const again = await seed(db, small)
  t.match(again.inserted, { ...small, profiles: small.users })
  const after = await rowCounts(db)
  t.equal(after.users, 2 * small.users)
  t.equal(after.posts, 2 * small.posts)
  t.equal(after.order_items, counts.order_items + again.inserted.order_items)
  t.equal(await scalar(db, sql`select count(distinct lower(email))::int as n from users`), after.users, 'emails are unique')
  await checkConsistency(t, db)
})

t.test('seed with zero counts, and with rows to reference missing', async (t) => {
  const db = await throwAwayDb(t, { poolSize: 4 })
  const report = await seed(db, { users: 0, posts: 0, comments: 0, products: 0, orders: 0 })
  t.same(report.inserted, { users: 0, profiles: 0, posts: 0, comments: 0, products: 0, orders: 0, order_items: 0 })
  await t.rejects(seed(db, { users: 0, posts: 1, comments: 0, products: 0, orders: 0 }), /need at least one user/)
  await t.rejects(seed(db, { users: 3, posts: 0, comments: 1, products: 0, orders: 0 }), /need at least one post/)
  await t.rejects(seed(db, { users: 3, posts: 0, comments: 0, products: 0, orders: 1 }), /need at least one product/)
  t.equal((await rowCounts(db)).users, 0, 'a failed seed leaves nothing behind')
  await t.rejects(seed(db, { users: -1, posts: 0, comments: 0, products: 0, orders: 0 }), RangeError)
  await t.rejects(seed(db, { users: 1.5, posts: 0, comments: 0, products: 0, orders: 0 }), RangeError)

  // Only products first, then orders over the existing products and users.
  await seed(db, { users: 5, posts: 0, comments: 0, products: 2, orders: 0 })
  const orders = await seed(db, { users: 0, posts: 0, comments: 0, products: 0, orders: 10 })
  t.equal(orders.inserted.orders, 10)
  t.equal(await scalar(db, sql`select max(n)::int as n from (select count(*) as n from order_items group by order_id) s`) <= 2,
    true, 'never more lines than products, never one product twice')
  await checkConsistency(t, db)
})

t.test('a bulk load rebuilds the indexes it drops, exactly as they were', async (t) => {
  const db = await throwAwayDb(t, { poolSize: 4 })
  const indexes = sql<{ def: string }>`select indexdef as def from pg_indexes where schemaname = current_schema() order by indexname`
  const before = (await indexes.execute(db)).rows
  t.ok(before.some(({ def }) => def.includes('gin_trgm_ops')), 'the trigram indexes are there to begin with')
  const report = await seed(db, { users: 10, posts: 20_000, comments: 0, products: 0, orders: 0 })
  t.equal(report.inserted.posts, 20_000)
  t.same((await indexes.execute(db)).rows, before)
  t.equal((await rowCounts(db)).posts, 20_000)
  await checkConsistency(t, db)
})

t.test('loadDemoData loads once, covering every table', async (t) => {
  const db = await throwAwayDb(t, { poolSize: 4 })
  t.equal(await loadDemoData(db), true, 'loads into an empty database')
  const counts = await rowCounts(db)
  for (const table of tables) t.ok(counts[table] > 0, `${table} has demo rows`)
  t.equal(counts.profiles, counts.users)
  await checkConsistency(t, db)
  t.ok(await db.selectFrom('users').select('id').where('email', '=', 'ada@example.com').executeTakeFirst(), 'Ada is there')
  t.equal(await scalar(db, sql`select count(distinct status)::int as n from orders`) > 2, true, 'orders in several statuses')
  t.equal(await scalar(db, sql`select count(distinct category)::int as n from products`) > 2, true, 'several categories')
  t.equal(await scalar(db, sql`select count(distinct created_at)::int as n from posts`), counts.posts, 'posts have distinct dates')
  await checkChronology(t, db)

  t.equal(await loadDemoData(db), false, 'does nothing the second time')
  t.same(await rowCounts(db), counts)
})

t.test('loadDemoData leaves a database with users alone', async (t) => {
  const db = await throwAwayDb(t, { poolSize: 4 })
  await seed(db, { users: 1, posts: 0, comments: 0, products: 0, orders: 0 })
  t.equal(await loadDemoData(db), false)
  t.equal((await rowCounts(db)).posts, 0)
})
