import { sql } from 'kysely'
import type { Db } from './connect.js'
import type { OrderStatus } from './types.js'

interface DemoUser {
  key: string
  name: string
  email: string
  daysAgo: number
  bio: string
  location: string
}

const users: DemoUser[] = [
  { key: 'ada', name: 'Ada Lovelace', email: 'ada@example.com', daysAgo: 320, bio: 'Writes notes longer than the original article.', location: 'London' },
  { key: 'grace', name: 'Grace Hopper', email: 'grace@example.com', daysAgo: 290, bio: 'Finds bugs, sometimes literal ones.', location: 'Arlington' },
  { key: 'alan', name: 'Alan Turing', email: 'alan@example.com', daysAgo: 240, bio: 'Long-distance runner with a soft spot for puzzles.', location: 'Manchester' },
  { key: 'katherine', name: 'Katherine Johnson', email: 'katherine@example.com', daysAgo: 180, bio: 'Checks the math twice, then once more.', location: 'Hampton' },
  { key: 'edsger', name: 'Edsger Dijkstra', email: 'edsger@example.com', daysAgo: 95, bio: 'Prefers short paths and handwritten notes.', location: 'Austin' }
]

interface DemoPost {
  key: string
  author: string
  daysAgo: number
  title: string
  content: string
}

const posts: DemoPost[] = [
  { key: 'engine', author: 'ada', daysAgo: 300, title: 'Notes on the Analytical Engine', content: 'The engine weaves algebraic patterns just as the Jacquard loom weaves flowers and leaves.' },
  { key: 'poetry', author: 'ada', daysAgo: 150, title: 'Poetical science', content: 'Imagination is the discovering faculty. Here is how I mix it with mathematics.' },
  { key: 'bug', author: 'grace', daysAgo: 270, title: 'The first actual bug', content: 'We found a moth in relay 70 of the Mark II. It is now taped into the logbook.' },
  { key: 'compilers', author: 'grace', daysAgo: 200, title: 'Why we need compilers', content: 'People should write programs in something close to English and let the machine do the translating.' },
  { key: 'nanosecond', author: 'grace', daysAgo: 40, title: 'What a nanosecond looks like', content: 'I hand out pieces of wire 30 cm long: the distance light travels in a nanosecond.' },
  { key: 'machines', author: 'alan', daysAgo: 230, title: 'Can machines think?', content: 'Instead of defining thinking, let us play a game and see whether anyone can tell the difference.' },
  { key: 'marathon', author: 'alan', daysAgo: 120, title: 'Training for a marathon', content: 'Running clears the head. My best ideas arrive somewhere around mile fifteen.' },
  { key: 'orbits', author: 'katherine', daysAgo: 170, title: 'Calculating orbits by hand', content: 'Before trusting the computer, the astronauts asked me to check its numbers. They matched.' },
  { key: 'paths', author: 'edsger', daysAgo: 90, title: 'Finding the shortest path', content: 'I designed the algorithm in twenty minutes at a café, without pencil and paper.' },
  { key: 'goto', author: 'edsger', daysAgo: 30, title: 'Go to statement considered harmful', content: 'The quality of programmers is a decreasing function of the density of go to statements.' }
]

/** Each comment comes `hoursAfter` both its post and its author existed. */
const comments: Array<{ post: string, author: string, hoursAfter: number, text: string }> = [
  { post: 'engine', author: 'grace', hoursAfter: 5, text: 'Your notes are longer than the paper itself, and better.' },
  { post: 'engine', author: 'alan', hoursAfter: 30, text: 'Would the engine ever originate anything, though?' },
  { post: 'engine', author: 'katherine', hoursAfter: 52, text: 'The Bernoulli numbers example is wonderful.' },
  { post: 'poetry', author: 'edsger', hoursAfter: 3, text: 'Beauty is our business, indeed.' },
  { post: 'poetry', author: 'grace', hoursAfter: 20, text: 'Mathematics and imagination belong together.' },
  { post: 'bug', author: 'ada', hoursAfter: 2, text: 'So that is where the word comes from!' },
  { post: 'bug', author: 'alan', hoursAfter: 9, text: 'Did the moth survive?' },
  { post: 'bug', author: 'edsger', hoursAfter: 14, text: 'Testing shows the presence of bugs, never their absence.' },
  { post: 'compilers', author: 'edsger', hoursAfter: 6, text: 'English is a rather imprecise programming language.' },
  { post: 'compilers', author: 'katherine', hoursAfter: 28, text: 'This will save us so much time on the calculations.' },
  { post: 'nanosecond', author: 'ada', hoursAfter: 4, text: 'What a lovely way to make it tangible.' },
  { post: 'nanosecond', author: 'alan', hoursAfter: 11, text: 'Could I have a microsecond too? It is a bit longer.' },
  { post: 'machines', author: 'ada', hoursAfter: 7, text: 'It can only do whatever we know how to order it to perform.' },
  { post: 'machines', author: 'grace', hoursAfter: 25, text: 'Count me in for the imitation game.' },
  { post: 'marathon', author: 'katherine', hoursAfter: 8, text: 'What pace do you aim for?' },
  { post: 'marathon', author: 'edsger', hoursAfter: 48, text: 'I prefer walking, but this is inspiring.' },
  { post: 'orbits', author: 'alan', hoursAfter: 3, text: 'Trust, but verify. Brilliant.' },
  { post: 'orbits', author: 'grace', hoursAfter: 16, text: 'The computer was lucky to have you check it.' },
  { post: 'paths', author: 'katherine', hoursAfter: 10, text: 'Twenty minutes! It took me longer to read it.' },
  { post: 'goto', author: 'grace', hoursAfter: 1, text: 'Strong opinions, strongly held.' },
  { post: 'goto', author: 'ada', hoursAfter: 12, text: 'The title alone will start a thousand debates.' }
]

interface DemoProduct {
  key: string
  name: string
  description: string
  category: string
  price: string
  stock: number
  daysAgo: number
}

const products: DemoProduct[] = [
  { key: 'notebook', name: 'Dot Grid Notebook', description: 'A5 notebook with 160 numbered pages of dotted paper.', category: 'books', price: '14.90', stock: 120, daysAgo: 330 },
  { key: 'sicp', name: 'Structure and Interpretation of Computer Programs', description: 'The classic wizard book, second edition.', category: 'books', price: '49.00', stock: 15, daysAgo: 310 },
  { key: 'atlas', name: 'Atlas of Remote Islands', description: 'Fifty islands I have never set foot on, and never will.', category: 'books', price: '24.50', stock: 8, daysAgo: 200 },
  { key: 'keyboard', name: 'Mechanical Keyboard', description: 'Tenkeyless keyboard with tactile brown switches.', category: 'electronics', price: '129.00', stock: 25, daysAgo: 280 },
  { key: 'headphones', name: 'Noise Cancelling Headphones', description: 'Over-ear headphones with 30 hours of battery life.', category: 'electronics', price: '249.99', stock: 10, daysAgo: 250 },
  { key: 'charger', name: 'USB-C Charger 65W', description: 'Compact charger for laptops and phones.', category: 'electronics', price: '39.95', stock: 0, daysAgo: 150 },
  { key: 'grinder', name: 'Burr Coffee Grinder', description: 'Conical burr grinder with 40 grind settings.', category: 'kitchen', price: '89.00', stock: 12, daysAgo: 260 },
  { key: 'skillet', name: 'Cast Iron Skillet', description: 'Pre-seasoned 26 cm skillet that will outlive us all.', category: 'kitchen', price: '34.99', stock: 40, daysAgo: 220 },
  { key: 'teapot', name: 'Glass Teapot', description: 'Borosilicate teapot with a stainless steel infuser.', category: 'kitchen', price: '27.50', stock: 18, daysAgo: 100 },
  { key: 'shoes', name: 'Trail Running Shoes', description: 'Lightweight shoes with a grippy sole for muddy trails.', category: 'sports', price: '119.00', stock: 22, daysAgo: 180 },
  { key: 'bottle', name: 'Insulated Water Bottle', description: 'Keeps drinks cold for 24 hours, hot for 12.', category: 'sports', price: '22.00', stock: 75, daysAgo: 140 },
  { key: 'puzzle', name: 'Enigma Puzzle Box', description: 'A wooden puzzle box with a secret compartment.', category: 'toys', price: '45.00', stock: 5, daysAgo: 60 }
]

/** Totals are computed from the items, so they always match. Each order comes `hoursAfter` its customer and its products existed. */
const orders: Array<{ user: string, status: OrderStatus, hoursAfter: number, items: Array<{ product: string, quantity: number }> }> = [
  { user: 'ada', status: 'shipped', hoursAfter: 400, items: [{ product: 'notebook', quantity: 3 }, { product: 'sicp', quantity: 1 }] },
  { user: 'grace', status: 'paid', hoursAfter: 2000, items: [{ product: 'keyboard', quantity: 1 }, { product: 'grinder', quantity: 1 }, { product: 'teapot', quantity: 2 }] },
  { user: 'alan', status: 'shipped', hoursAfter: 900, items: [{ product: 'shoes', quantity: 1 }, { product: 'bottle', quantity: 2 }] },
  { user: 'katherine', status: 'pending', hoursAfter: 3000, items: [{ product: 'headphones', quantity: 1 }] },
  { user: 'edsger', status: 'cancelled', hoursAfter: 200, items: [{ product: 'puzzle', quantity: 1 }, { product: 'atlas', quantity: 1 }] },
  { user: 'ada', status: 'paid', hoursAfter: 600, items: [{ product: 'skillet', quantity: 1 }, { product: 'charger', quantity: 1 }] }
]

/** Exact money arithmetic: prices are strings with two decimals, summed in cents. */
const cents = (price: string | number): number => Math.round(Number(price) * 100)
const money = (value: number): string => (value / 100).toFixed(2)

type Stamped = 'users' | 'posts' | 'comments' | 'products' | 'orders'

/**
 * Sets `created_at` (and the `updated_at` that goes with it) to a given number of hours ago. These columns
 * are server-set and not writable through the typed tables, so the demo data backdates them here.
 */
async function backdate (db: Db, table: Stamped, stamps: Array<{ id: number, hoursAgo: number }>): Promise<void> {
  if (stamps.length === 0) return
  const values = sql.join(stamps.map(({ id, hoursAgo }) => sql`(${id}::bigint, ${hoursAgo}::double precision)`))
  const updated = table === 'posts' ? sql`, updated_at = v.at` : sql``
  await sql`
    update ${sql.table(table)} t set created_at = v.at${updated}
    from (select id, date_trunc('minute', now()) - make_interval(secs => hours * 3600) as at from (values ${values}) s (id, hours)) v
    where t.id = v.id`.execute(db)
}

function byKey<T extends { key: string }> (rows: T[], ids: Array<{ id: number }>): Map<string, { row: T, id: number }> {
  return new Map(rows.map((row, index) => [row.key, { row, id: ids[index]?.id ?? Number.NaN }]))
}

function lookup<V> (map: Map<string, V>, key: string): V {
  const value = map.get(key)
  if (value === undefined) throw new Error(`demo data: unknown reference ${key}`)
  return value
}

/**
 * Loads a small, friendly data set covering every resource, in one transaction, when the database has no
 * users yet (administrators aside). Every demo user gets `passwordHash` (none when null). Returns whether
 * it loaded anything.
 */
export async function loadDemoData (db: Db, passwordHash: string | null = null): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    // Two processes starting at once on an empty database must not both load the data.
    await sql`lock table users in share row exclusive mode`.execute(trx)
    const existing = await trx.selectFrom('users').select('id').where('role', '<>', 'admin').limit(1).executeTakeFirst()
    if (existing !== undefined) return false

    const userIds = await trx.insertInto('users')
      .values(users.map((user) => ({ name: user.name, email: user.email, password_hash: passwordHash })))
      .returning('id')
      .execute()
    const userMap = byKey(users, userIds)
    await trx.insertInto('profiles')
      .values(users.map((user) => ({
        user_id: lookup(userMap, user.key).id,
        bio: user.bio,
        location: user.location,
        avatar_url: `https://avatars.example.com/${user.key}.png`
      })))
      .execute()

    const postIds = await trx.insertInto('posts')
      .values(posts.map((post) => ({ author_id: lookup(userMap, post.author).id, title: post.title, content: post.content })))
      .returning('id')
      .execute()
    const postMap = byKey(posts, postIds)

    const commentIds = await trx.insertInto('comments')
      .values(comments.map((comment) => ({
        post_id: lookup(postMap, comment.post).id,
        author_id: lookup(userMap, comment.author).id,
        text: comment.text
      })))
      .returning('id')
      .execute()

    const productIds = await trx.insertInto('products')
      .values(products.map((product) => ({
        name: product.name,
        description: product.description,
        category: product.category,
        price: Number(product.price),
        stock: product.stock
      })))
      .returning('id')
      .execute()
    const productMap = byKey(products, productIds)

    const orderIds = await trx.insertInto('orders')
      .values(orders.map((order) => ({
        user_id: lookup(userMap, order.user).id,
        status: order.status,
        total: Number(money(order.items.reduce((sum, item) =>
          sum + item.quantity * cents(lookup(productMap, item.product).row.price), 0)))
      })))
      .returning('id')
      .execute()
    await trx.insertInto('order_items')
      .values(orders.flatMap((order, index) => order.items.map((item) => {
        const product = lookup(productMap, item.product)
        return { order_id: orderIds[index]?.id ?? Number.NaN, product_id: product.id, quantity: item.quantity, unit_price: Number(product.row.price) }
      })))
      .execute()

    const userHours = (key: string): number => lookup(userMap, key).row.daysAgo * 24
    const postHours = (key: string): number => lookup(postMap, key).row.daysAgo * 24
    await backdate(trx, 'users', users.map((user) => ({ id: lookup(userMap, user.key).id, hoursAgo: userHours(user.key) })))
    await backdate(trx, 'posts', posts.map((post) => ({ id: lookup(postMap, post.key).id, hoursAgo: postHours(post.key) })))
    const productHours = (key: string): number => lookup(productMap, key).row.daysAgo * 24
    await backdate(trx, 'comments', comments.map((comment, index) => ({
      id: commentIds[index]?.id ?? Number.NaN,
      hoursAgo: Math.max(Math.min(postHours(comment.post), userHours(comment.author)) - comment.hoursAfter, 0)
    })))
    await backdate(trx, 'products', products.map((product) => ({ id: lookup(productMap, product.key).id, hoursAgo: productHours(product.key) })))
    await backdate(trx, 'orders', orders.map((order, index) => ({
      id: orderIds[index]?.id ?? Number.NaN,
      hoursAgo: Math.max(Math.min(userHours(order.user), ...order.items.map((item) => productHours(item.product))) - order.hoursAfter, 0)
    })))
    await sql`update profiles p set updated_at = u.created_at from users u
      where p.user_id = u.id and u.id in (${sql.join(userIds.map(({ id }) => id))})`.execute(trx)
    return true
  })
}
