// The bench judges nested GraphQL against a raw server's answer to the same request (bench/nested.ts,
// served by bench/baseline.ts): that reference must answer what the API answers, or the target
// compares two different amounts of work.
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { sql } from 'kysely'
import pg from 'pg'
import t from 'tap'
import { GRAPHQL_NESTED } from '../../bench/cases.js'
import { nestedAnswer, type Queryable } from '../../bench/nested.js'
import { startBaseline } from '../../bench/servers.js'
import { connect, type Db } from '../../db/connect.js'
import { authHeaders, build } from '../helpers/app.js'
import { wireDatabase } from '../helpers/database.js'

interface Answer { data: { users: Array<{ posts: Array<{ comments: Array<{ text: string, author: { name: string } | null }> }> }> } }

// Text that JSON escapes: quotes, a backslash, a line break, a control character, non-ASCII, an
// astral-plane character and what would close a script tag.
const awkward = 'Zoë "quoted" \\ back\nslash \u0001 🚀 </script>'

/**
 * 30 users (more than the query's 20), the third with an awkward name; user n writes n mod 8 posts
 * (none, or more than the 5 asked), made round by round so that one user's posts are not
 * consecutive ids; post m has m mod 4 comments, the first 23 (more than the default 20), each by
 * a user further down the list, every third with awkward text.
 */
async function fill (db: Db): Promise<void> {
  await sql`insert into users (name, email)
    select case when n = 3 then ${awkward} else 'User ' || n end, 'user' || n || '@example.com'
    from generate_series(1, 30) as n order by n`.execute(db)
  await sql`insert into posts (author_id, title, content)
    select u.id, 'Post ' || k || ' of ' || u.id, 'Content'
    from generate_series(1, 7) as k
    cross join (select id, row_number() over (order by id) as n from users) as u
    where k <= u.n % 8 order by k, u.id`.execute(db)
  await sql`insert into comments (post_id, author_id, text)
    select p.id, (select id from users order by id offset (p.m * 7 + k) % 30 limit 1),
      case when k % 3 = 0 then ${awkward} || ' ' || k else 'Comment ' || k || ' on ' || p.id end
    from (select id, row_number() over (order by id) as m from posts) as p
    cross join lateral generate_series(1, case when p.m = 1 then 23 else p.m % 4 end) as k
    order by p.id desc, k`.execute(db)
}

/** `pool` with a count of the statements sent through it. */
function counted (pool: pg.Pool): Queryable & { statements: () => number } {
  let statements = 0
  return {
    query: async (config) => {
      statements++
      return pool.query<{ body: string }>(config)
    },
    statements: () => statements
  }
}

t.test('the raw reference answers the nested query as the API does, from one statement', async (t) => {
  const url = await wireDatabase(t)
  const db = await connect({ databaseUrl: url, poolSize: 1 })
  t.teardown(() => db.destroy())
  const app = await build(t, { db })
  await fill(db)

  const request = { query: GRAPHQL_NESTED }
  const api = await app.inject({ method: 'POST', url: '/graphql', payload: request, headers: await authHeaders(app, { id: 1, role: 'admin' }) })
  t.equal(api.statusCode, 200)
  const expected = JSON.parse(api.body) as Answer & { errors?: unknown }
  t.equal(expected.errors, undefined)
  // The data reach every limit and every empty case the answer has.
  const { users } = expected.data
  const posts = users.flatMap((user) => user.posts)
  const comments = posts.flatMap((post) => post.comments)
  t.equal(users.length, 20, 'users(limit: 20) of 30')
  t.ok(users.some((user) => user.posts.length === 0) && users.some((user) => user.posts.length === 5), 'no posts, and 5 posts of 7')
  t.ok(posts.some((post) => post.comments.length === 0) && posts.some((post) => post.comments.length === 20), 'no comments, and 20 comments of 23')
  t.ok(comments.some((comment) => comment.author?.name === awkward) && comments.some((comment) => comment.text.startsWith(awkward)), 'awkward text')

  const reference = await startBaseline(url, 1, join(tmpdir(), `tandem-bench-nested-${process.pid}.log`))
  t.teardown(() => reference.stop())
  const post = async (body: unknown) => fetch(`${reference.origin}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const answered = await post(request)
  t.equal(answered.status, 200)
  t.equal(answered.headers.get('content-type'), 'application/json; charset=utf-8')
  t.strictSame(JSON.parse(await answered.text()), expected, 'the same users, posts and comments, in the same order')
  t.equal((await post({ query: '{ users(limit: 20) { name } }' })).status, 400, 'it answers the nested query only')
  t.equal((await (await fetch(reference.origin)).json() as { data: unknown[] }).data.length, 20, 'any GET still answers the first page')

  const pool = new pg.Pool({ connectionString: url, max: 1 })
  t.teardown(() => pool.end())
  const counter = counted(pool)
  t.strictSame(JSON.parse(await nestedAnswer(counter, 'test_nested')), expected)
  t.strictSame(JSON.parse(await nestedAnswer(counter, 'test_nested')), expected, 'again, from the prepared statement')
  t.equal(counter.statements(), 2, 'one statement an answer')
})
