import { sql, type RawBuilder } from 'kysely'
import type { Db } from './connect.js'

/** How many rows of each resource to add. Profiles follow users; order items follow orders (1-3 each). */
export interface SeedCounts {
  users: number
  posts: number
  comments: number
  products: number
  orders: number
}

export interface SeedReport {
  /** Rows inserted, per table. */
  inserted: {
    users: number
    profiles: number
    posts: number
    comments: number
    products: number
    orders: number
    order_items: number
  }
  /** Wall-clock time of the whole run, analyze included. */
  ms: number
}

/** Rows per statement: large enough to be fast, small enough to keep the server's memory bounded. */
const BATCH = 100_000

export const seedResources = ['users', 'posts', 'comments', 'products', 'orders'] as const

/**
 * Adds generated rows with set-based SQL (`insert … select … from generate_series`), in one transaction.
 * New rows only ever reference rows that exist; it never touches existing rows, so it can run on a live
 * database and run again: user emails are `user<id>@example.com`, numbered from the users' id sequence.
 */
export async function seed (db: Db, counts: SeedCounts): Promise<SeedReport> {
  for (const key of seedResources) {
    const value = counts[key]
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`${key} must be a non-negative integer, got ${String(value)}`)
    }
  }
  const started = performance.now()
  const inserted = { users: 0, profiles: 0, posts: 0, comments: 0, products: 0, orders: 0, order_items: 0 }

  await db.transaction().execute(async (trx) => {
    await sql`set local work_mem = '64MB'`.execute(trx)
    await sql`set local maintenance_work_mem = '128MB'`.execute(trx)

    await bulk(trx, ['users', 'profiles'], counts.users, async () => {
      for (const n of batches(counts.users)) {
        const row = await one<{ users: number, profiles: number }>(trx, insertUsers(n, await sequence(trx, 'users')))
        inserted.users += row.users
        inserted.profiles += row.profiles
      }
    })
    const users = counts.posts + counts.comments + counts.orders > 0 ? await snapshot(trx, 'users') : 0
    if (users === 0 && counts.posts + counts.comments + counts.orders > 0) {
      throw new Error('posts, comments and orders need at least one user')
    }

    await bulk(trx, ['posts'], counts.posts, async () => {
      for (const n of batches(counts.posts)) inserted.posts += (await one<{ n: number }>(trx, insertPosts(n, users))).n
    })

    if (counts.comments > 0) {
      const posts = await snapshot(trx, 'posts')
      if (posts === 0) throw new Error('comments need at least one post')
      await bulk(trx, ['comments'], counts.comments, async () => {
        for (const n of batches(counts.comments)) {
          inserted.comments += (await one<{ n: number }>(trx, insertComments(n, users, posts))).n
        }
      })
    }

    await bulk(trx, ['products'], counts.products, async () => {
      for (const n of batches(counts.products)) inserted.products += (await one<{ n: number }>(trx, insertProducts(n))).n
    })

    if (counts.orders > 0) {
      const products = await snapshot(trx, 'products')
      if (products === 0) throw new Error('orders need at least one product')
      await bulk(trx, ['orders', 'order_items'], counts.orders, async () => {
        for (const n of batches(counts.orders)) {
          const row = await one<{ orders: number, items: number }>(trx, insertOrders(n, users, products, await sequence(trx, 'orders')))
          inserted.orders += row.orders
          inserted.order_items += row.items
        }
      })
    }
  })

  const touched = (Object.keys(inserted) as Array<keyof typeof inserted>).filter((table) => inserted[table] > 0)
  if (touched.length > 0) await sql`analyze ${sql.join(touched.map((table) => sql.table(table)))}`.execute(db)

  return { inserted, ms: Math.round(performance.now() - started) }
}

function * batches (total: number): Generator<number> {
  for (let done = 0; done < total; done += BATCH) yield Math.min(BATCH, total - done)
}

type Table = keyof SeedReport['inserted']

/**
 * Runs `load`, which adds `rows` rows to `tables[0]` (and the tables that go with it). When that is many
 * rows and at least as many as the table holds, the tables' secondary indexes (neither unique nor
 * primary, nor backing a constraint) are dropped first and built again afterwards, from their own
 * definitions: one sorted build is several times faster than as many single inserts, trigram indexes
 * most of all. It all happens inside the seed's transaction, so a failure restores the indexes too;
 * meanwhile other sessions wait for those tables.
 */
async function bulk (db: Db, tables: [Table, ...Table[]], rows: number, load: () => Promise<void>): Promise<void> {
  if (rows < REBUILD_MIN || rows < await estimatedRows(db, tables[0])) return load()
  const { rows: indexes } = await sql<{ name: string, definition: string }>`
    select i.indexrelid::regclass::text as name, pg_get_indexdef(i.indexrelid) as definition
    from pg_index i
    where i.indrelid in (${sql.join(tables.map((table) => sql`${table}::regclass`))})
      and not i.indisunique and not i.indisprimary
      and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid)
    order by 1`.execute(db)
  // Names and definitions come from the catalog, already quoted where needed.
  for (const { name } of indexes) await sql`drop index ${sql.raw(name)}`.execute(db)
  await load()
  for (const { definition } of indexes) await sql.raw(definition).execute(db)
}

/** Fewer rows than this are inserted with the indexes in place. */
const REBUILD_MIN = 20_000

async function estimatedRows (db: Db, table: Table): Promise<number> {
  const row = await one<{ n: number }>(db, sql`select greatest(reltuples, 0)::bigint as n from pg_class where oid = ${table}::regclass`)
  return row.n
}

async function one<Row> (db: Db, query: RawBuilder<unknown>): Promise<Row> {
  const { rows } = await query.execute(db)
  return rows[0] as Row
}

async function sequence (db: Db, table: 'users' | 'orders'): Promise<string> {
  const row = await one<{ seq: string }>(db, sql`select pg_get_serial_sequence(${table}, 'id') as seq`)
  return row.seq
}

/**
 * Numbers the table's rows 1..n in a temporary table (dropped at commit), so that a random number in
 * 1..n picks an existing row however sparse the ids are. Returns n.
 */
async function snapshot (db: Db, table: 'users' | 'posts' | 'products'): Promise<number> {
  const name = sql.table(`seed_${table}`)
  const extra = table === 'products' ? sql`price, created_at` : sql`created_at`
  await sql`create temporary table ${name} on commit drop as
    select (row_number() over (order by id))::int as rn, id, ${extra} from ${sql.table(table)}`.execute(db)
  // Temporary tables are never auto-analyzed; without statistics the planner would loop instead of hashing.
  await sql`analyze ${name}`.execute(db)
  return (await one<{ n: number }>(db, sql`select count(*)::int as n from ${name}`)).n
}

/** A random element of a fixed list, evaluated per row. */
function pick (list: readonly string[]): RawBuilder<string> {
  return sql<string>`(${array(list)})[1 + floor(random() * ${sql.lit(list.length)})::int]`
}

function array (list: readonly string[]): RawBuilder<string[]> {
  return sql<string[]>`array[${sql.join(list.map((item) => sql.lit(item)))}]`
}

/** A random point between `from` and now: rows created after the rows they belong to. */
function after (from: RawBuilder<unknown>, fraction: RawBuilder<unknown>): RawBuilder<Date> {
  return sql<Date>`${from} + ${fraction} * (now() - ${from})`
}

const yearAgo = sql<Date>`now() - random() * interval '365 days'`

const bios = [
  'Coffee first, code second.', 'Writes about databases and distributed systems.', 'Weekend hiker and amateur baker.',
  'Product designer who likes clean interfaces.', 'Learning Rust one borrow at a time.', 'Runs on tea and curiosity.',
  'Open source contributor and occasional speaker.', 'Photographer chasing golden hour.',
  'Builds things for the web since the dial-up days.', 'Reads too many books, plants too many tomatoes.'
]
const cities = [
  'Amsterdam', 'Berlin', 'Boston', 'Buenos Aires', 'Cape Town', 'Dublin', 'Helsinki', 'Lisbon', 'London', 'Melbourne',
  'Montreal', 'Nairobi', 'Osaka', 'Paris', 'Seoul', 'Singapore', 'Toronto', 'Vienna', 'Warsaw', 'Zurich'
]

function insertUsers (n: number, seq: string): RawBuilder<{ users: number, profiles: number }> {
  return sql`
    with plan as materialized (
      select nextval(${seq}::regclass) as id, ${yearAgo} as created_at, random() as r
      from generate_series(1, ${n}::int)
    ), u as (
      insert into users (id, name, email, password_hash, email_verified_at, created_at)
      overriding system value
      select id, 'User ' || id, 'user' || id || '@example.com', null,
             case when r < 0.7 then created_at + r * interval '2 days' end, created_at
      from plan
      returning id, created_at
    ), p as (
      insert into profiles (user_id, bio, avatar_url, location, updated_at)
      select id,
             case when random() < 0.7 then ${pick(bios)} end,
             case when random() < 0.5 then 'https://avatars.example.com/' || id || '.png' end,
             case when random() < 0.8 then ${pick(cities)} end,
             created_at
      from u
      returning 1
    )
    select (select count(*) from u)::int as users, (select count(*) from p)::int as profiles`
}

const openers = [
  'Notes on', 'Thoughts on', 'A beginner\'s guide to', 'Lessons learned from', 'Why I love', 'Getting started with',
  'A deep dive into', 'Mistakes I made with', 'The case for', 'Rethinking', 'Ten tips for', 'What nobody tells you about'
]
const subjects = [
  'PostgreSQL indexes', 'sourdough baking', 'trail running', 'home gardening', 'TypeScript generics', 'remote work',
  'mechanical keyboards', 'street photography', 'GraphQL APIs', 'espresso brewing', 'urban cycling', 'chess openings',
  'container gardening', 'REST pagination', 'film cameras', 'bread flour', 'query planning', 'bird watching',
  'vintage synthesizers', 'weekend camping'
]
const sentences = [
  'Here is what worked and what did not.', 'The results surprised me.', 'It took a while to get right.',
  'Most advice online skips the hard parts.', 'Start small and measure everything.', 'Patience is the key ingredient.',
  'A friend asked me to write this down.', 'Practice beats documentation.', 'I would do a few things differently.',
  'Three months in, a quick update.', 'Short version: it is worth it.', 'My notes from a long weekend.',
  'Mistakes included, at no extra cost.', 'Questions welcome in the comments.'
]

// Short texts on purpose: every distinct trigram of title and content is an entry in the search index.
function insertPosts (n: number, users: number): RawBuilder<{ n: number }> {
  return sql`
    with g as materialized (
      select 1 + floor(random() * ${users}::int)::int as rn, random() as r,
             ${pick(openers)} || ' ' || ${pick(subjects)} as title, ${pick(sentences)} as content
      from generate_series(1, ${n}::int)
    ), rows as materialized (
      select u.id as author_id, g.title, g.content, ${after(sql`u.created_at`, sql`g.r`)} as created_at
      from g join seed_users u using (rn)
    ), ins as (
      insert into posts (author_id, title, content, created_at, updated_at)
      select author_id, title, content, created_at, created_at from rows
      returning 1
    )
    select count(*)::int as n from ins`
}

const remarks = [
  'Great post, thanks for sharing!', 'I tried this and it worked for me.', 'Could you expand on the second point?',
  'This matches my experience exactly.', 'I respectfully disagree, but good read.', 'Bookmarked for later.',
  'What would you recommend for beginners?', 'The part about patience really resonates.',
  'Any follow-up planned?', 'Clear and to the point, much appreciated.', 'I learned something new today.',
  'Have you compared this with other approaches?'
]

function insertComments (n: number, users: number, posts: number): RawBuilder<{ n: number }> {
  return sql`
    with g as materialized (
      select 1 + floor(random() * ${users}::int)::int as user_rn, 1 + floor(random() * ${posts}::int)::int as post_rn,
             random() as r, ${pick(remarks)} as text
      from generate_series(1, ${n}::int)
    ), ins as (
      insert into comments (post_id, author_id, text, created_at)
      select p.id, u.id, g.text, ${after(sql`greatest(p.created_at, u.created_at)`, sql`g.r`)}
      from g join seed_posts p on p.rn = g.post_rn join seed_users u on u.rn = g.user_rn
      returning 1
    )
    select count(*)::int as n from ins`
}

const categories = ['books', 'electronics', 'garden', 'home', 'kitchen', 'outdoors', 'sports', 'toys']
// One row per category, all the same length (PostgreSQL arrays are rectangular).
const nouns = [
  ['Novel', 'Cookbook', 'Field Guide', 'Atlas', 'Poetry Collection', 'Notebook'],
  ['Headphones', 'Bluetooth Speaker', 'USB-C Charger', 'Webcam', 'Mechanical Keyboard', 'E-Reader'],
  ['Watering Can', 'Pruning Shears', 'Planter', 'Garden Hose', 'Seed Kit', 'Bird Feeder'],
  ['Desk Lamp', 'Throw Blanket', 'Wall Clock', 'Bookshelf', 'Scented Candle', 'Storage Basket'],
  ['Chef Knife', 'Cast Iron Skillet', 'Coffee Grinder', 'Teapot', 'Cutting Board', 'Mixing Bowl Set'],
  ['Tent', 'Hiking Backpack', 'Sleeping Bag', 'Headlamp', 'Water Bottle', 'Camping Stove'],
  ['Yoga Mat', 'Tennis Racket', 'Running Shoes', 'Jump Rope', 'Dumbbell Set', 'Cycling Gloves'],
  ['Puzzle', 'Building Blocks', 'Kite', 'Board Game', 'Plush Bear', 'Wooden Train']
]
const adjectives = [
  'Classic', 'Compact', 'Deluxe', 'Eco', 'Essential', 'Premium', 'Smart', 'Vintage', 'Everyday', 'Pro', 'Rustic', 'Ultralight'
]
const colors = ['Black', 'White', 'Forest Green', 'Navy', 'Sand', 'Red', 'Slate']
const pitches = [
  'built to last for years.', 'loved by our customers.', 'a perfect gift.', 'made from responsibly sourced materials.',
  'designed for daily use.', 'with a two-year warranty.', 'small enough to take anywhere.', 'our best seller this season.'
]

function insertProducts (n: number): RawBuilder<{ n: number }> {
  const nounRows = sql.join(nouns.map((row) => array(row)))
  return sql`
    with g as materialized (
      select 1 + floor(random() * ${sql.lit(categories.length)})::int as c, 1 + floor(random() * ${sql.lit(nouns[0]?.length ?? 1)})::int as k,
             ${pick(adjectives)} as adjective, case when random() < 0.5 then ${pick(colors)} end as color,
             ${pick(pitches)} as pitch, ${yearAgo} as created_at
      from generate_series(1, ${n}::int)
    ), rows as materialized (
      select (${array(categories)})[c] as category, (array[${nounRows}])[c][k] as noun, adjective, color, pitch, created_at
      from g
    ), ins as (
      insert into products (name, description, category, price, stock, created_at)
      select adjective || ' ' || noun || coalesce(', ' || color, ''),
             case when random() < 0.9 then (case when left(adjective, 1) in ('A', 'E', 'I', 'O', 'U') then 'An ' else 'A ' end) || lower(adjective) || ' ' || lower(noun) || coalesce(' in ' || lower(color), '') || ', ' || pitch end,
             category, round((1 + random() * 499)::numeric, 2), floor(random() * 1001)::int, created_at
      from rows
      returning 1
    )
    select count(*)::int as n from ins`
}

// Weighted: most orders have shipped, few are cancelled.
const statuses = ['pending', 'pending', 'paid', 'paid', 'paid', 'shipped', 'shipped', 'shipped', 'shipped', 'cancelled']

function insertOrders (n: number, users: number, products: number, seq: string): RawBuilder<{ orders: number, items: number }> {
  // Ids come from the identity sequence up front so that orders and their items go in with one statement,
  // totals already summed; a product appears at most once per order (consecutive numbers modulo n).
  return sql`
    with g as materialized (
      select 1 + floor(random() * ${users}::int)::int as rn, random() as r, ${pick(statuses)} as status,
             least(1 + floor(random() * 3)::int, ${products}::int) as lines, floor(random() * ${products}::int)::int as start
      from generate_series(1, ${n}::int)
    ), plan as materialized (
      select nextval(${seq}::regclass) as id, u.id as user_id, u.created_at as joined, g.status, g.lines, g.start, g.r
      from g join seed_users u using (rn)
    ), lines as materialized (
      select plan.id as order_id, p.id as product_id, 1 + floor(random() * 4)::int as quantity, p.price as unit_price,
             p.created_at as listed
      from plan cross join lateral generate_series(0, plan.lines - 1) as j
      join seed_products p on p.rn = 1 + (plan.start + j) % ${products}::int
    ), totals as (
      select order_id, sum(quantity * unit_price) as total, max(listed) as listed from lines group by order_id
    ), o as (
      -- placed after the customer joined and its products were listed
      insert into orders (id, user_id, status, total, created_at)
      overriding system value
      select plan.id, plan.user_id, plan.status, t.total, ${after(sql`greatest(plan.joined, t.listed)`, sql`plan.r`)}
      from plan join totals t on t.order_id = plan.id
      returning 1
    ), i as (
      insert into order_items (order_id, product_id, quantity, unit_price)
      select order_id, product_id, quantity, unit_price from lines
      returning 1
    )
    select (select count(*) from o)::int as orders, (select count(*) from i)::int as items`
}
