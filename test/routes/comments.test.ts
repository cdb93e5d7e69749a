import type { LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import t from 'tap'
import { adminToken, apiClient, body, build, signedIn } from '../helpers/app.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]
type Comment = { id: number, post_id: number, author_id: number, text: string, created_at: string }
type Page = { data: Array<Partial<Comment> & { id: number }>, pagination: { hasMore: boolean, nextCursor: string | null } }

/** Alice wrote a post; Bob and Carol may comment on it. */
async function setup (t: Test) {
  const app = await build(t)
  const alice = await signedIn(app, { name: 'Alice' })
  const bob = await signedIn(app, { name: 'Bob' })
  const carol = await signedIn(app, { name: 'Carol' })
  const post = body<{ id: number }>(await apiClient(app, alice.headers)('POST', '/posts', { title: 'On comments', content: 'Say something' }))
  return {
    app,
    post,
    alice: { ...alice, call: apiClient(app, alice.headers) },
    bob: { ...bob, call: apiClient(app, bob.headers) },
    carol: { ...carol, call: apiClient(app, carol.headers) },
    admin: apiClient(app, await adminToken(app)),
    anonymous: apiClient(app),
    forged: apiClient(app, { authorization: 'Bearer not.a.token' })
  }
}

async function unauthorized (t: Test, res: LightMyRequestResponse, what: string) {
  t.equal(res.statusCode, 401, what)
  t.equal(res.headers['www-authenticate'], 'Bearer', what)
}

t.test('POST /posts/{id}/comments: 201 comment by the caller, row written; 404, 401, 400', async (t) => {
  const { app, post, bob, anonymous, forged } = await setup(t)
  const res = await bob.call('POST', `/posts/${post.id}/comments`, { text: 'First!' })
  t.equal(res.statusCode, 201)
  const comment = body<Comment>(res)
  t.same(Object.keys(comment), ['id', 'post_id', 'author_id', 'text', 'created_at'])
  t.match(comment, { post_id: post.id, author_id: bob.id, text: 'First!' })
  t.match(comment.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  const row = await app.db.selectFrom('comments').selectAll().where('id', '=', comment.id).executeTakeFirstOrThrow()
  t.match(row, { post_id: post.id, author_id: bob.id, text: 'First!' })

  const unknown = await bob.call('POST', '/posts/999/comments', { text: 'Anyone?' })
  t.equal(unknown.statusCode, 404)
  t.same(body(unknown), { error: 'post not found' })
  await unauthorized(t, await anonymous('POST', `/posts/${post.id}/comments`, { text: 'hi' }), 'no token')
  await unauthorized(t, await forged('POST', `/posts/${post.id}/comments`, { text: 'hi' }), 'bad token')

  const cases: Array<[object, string]> = [
    [{}, 'text'],
    [{ text: '' }, 'text'],
    [{ text: 'x'.repeat(10_001) }, 'text'],
    [{ text: 5 }, 'text'],
    [{ text: 'hi', author_id: 1 }, 'author_id']
  ]
  for (const [payload, field] of cases) {
    const bad = await bob.call('POST', `/posts/${post.id}/comments`, payload)
    t.equal(bad.statusCode, 400, JSON.stringify(payload).slice(0, 40))
    t.equal(body(bad).field, field)
  }
  t.equal((await bob.call('POST', `/posts/${post.id}/comments`, { text: 'x'.repeat(10_000) })).statusCode, 201, 'the limit itself is fine')
  const bad = await bob.call('POST', '/posts/abc/comments', { text: 'hi' })
  t.equal(body(bad).field, 'id')
  const count = await app.db.selectFrom('comments').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow()
  t.equal(Number(count.n), 2)
})

t.test('GET /posts/{id}/comments pages by keyset, sorts and filters; 404, 401, 400', async (t) => {
  const { app, post, alice, bob, carol, anonymous } = await setup(t)
  for (let i = 0; i < 12; i++) await (i % 3 === 0 ? carol : bob).call('POST', `/posts/${post.id}/comments`, { text: `comment ${i}` })
  const other = body<{ id: number }>(await alice.call('POST', '/posts', { title: 'Other', content: 'Quiet' }))
  await bob.call('POST', `/posts/${other.id}/comments`, { text: 'elsewhere' })
  // Out of id order, so that sorting by created_at shows.
  await sql`update comments set created_at = timestamptz '2026-01-01' + ((id * 7) % 5) * interval '1 minute'`.execute(app.db)
  const all = await app.db.selectFrom('comments').select(['id', 'created_at', 'author_id']).where('post_id', '=', post.id).execute()

  const walk = async (query: string) => {
    const ids: number[] = []
    let url = `/posts/${post.id}/comments?${query}`
    for (let guard = 0; guard < 50; guard++) {
      const res = await alice.call('GET', url)
      t.equal(res.statusCode, 200, url)
      const page = body<Page>(res)
      ids.push(...page.data.map((c) => c.id))
      if (page.pagination.nextCursor === null) return ids
      t.match(res.headers.link, /rel="next"/)
      url = `/posts/${post.id}/comments?${query}&cursor=${encodeURIComponent(page.pagination.nextCursor)}`
    }
    return ids
  }
  t.same(await walk('limit=5'), all.map((c) => c.id).sort((a, b) => a - b))
  t.same(await walk('limit=5&sort=-id'), all.map((c) => c.id).sort((a, b) => b - a))
  const byTime = [...all].sort((a, b) => (b.created_at.getTime() - a.created_at.getTime()) || b.id - a.id).map((c) => c.id)
  t.same(await walk('limit=4&sort=-created_at'), byTime, 'sort=-created_at, ties by id')
  t.same(await walk(`limit=2&author_id=${carol.id}`), all.filter((c) => c.author_id === carol.id).map((c) => c.id))

  const narrowed = body<Page>(await alice.call('GET', `/posts/${post.id}/comments?fields=text&q=ENT%201&limit=1&total=true`))
  t.same(narrowed.data, [{ id: 2, text: 'comment 1' }])
  t.match(narrowed.pagination, { hasMore: true, total: 3 }, 'comment 1, 10 and 11')

  t.same(body<Page>(await alice.call('GET', `/posts/${other.id}/comments?limit=5`)).data.map((c) => c.text), ['elsewhere'])
  const quiet = body<{ id: number }>(await alice.call('POST', '/posts', { title: 'Silence', content: '...' }))
  const empty = await alice.call('GET', `/posts/${quiet.id}/comments`)
  t.equal(empty.statusCode, 200)
  t.same(body(empty), { data: [], pagination: { hasMore: false, nextCursor: null, limit: 20 } })

  const missing = await alice.call('GET', '/posts/999/comments')
  t.equal(missing.statusCode, 404)
  t.same(body(missing), { error: 'post not found' })

  const first = body<Page>(await alice.call('GET', `/posts/${post.id}/comments?limit=2`))
  const cursor = encodeURIComponent(first.pagination.nextCursor as string)
  for (const [query, field] of [
    ['sort=text', 'sort'],
    ['include=author', 'include'],
    ['fields=body', 'fields'],
    ['limit=500', 'limit'],
    [`author_id=${bob.id}&cursor=${cursor}`, 'cursor']
  ] as const) {
    const res = await alice.call('GET', `/posts/${post.id}/comments?${query}`)
    t.equal(res.statusCode, 400, query)
    t.equal(body(res).field, field, query)
  }
  const elsewhere = await alice.call('GET', `/posts/${other.id}/comments?cursor=${cursor}`)
  t.equal(body(elsewhere).field, 'cursor', 'a cursor of one post\'s comments does not page another\'s')
  await unauthorized(t, await anonymous('GET', `/posts/${post.id}/comments`), 'no token')
})

t.test('DELETE /comments/{id}: author or admin, 204; 403, 404, 401, 412', async (t) => {
  const { app, post, alice, bob, carol, admin, anonymous } = await setup(t)
  const make = async (text: string) => body<Comment>(await bob.call('POST', `/posts/${post.id}/comments`, { text })).id
  const [first, second, third] = [await make('one'), await make('two'), await make('three')]
  const remaining = async () => (await app.db.selectFrom('comments').select('id').orderBy('id').execute()).map((c) => c.id)

  await unauthorized(t, await anonymous('DELETE', `/comments/${first}`), 'no token')
  const denied = await carol.call('DELETE', `/comments/${first}`)
  t.equal(denied.statusCode, 403, 'another user may not')
  t.type(body(denied).error, 'string')
  t.equal((await alice.call('DELETE', `/comments/${first}`)).statusCode, 403, 'nor may the post\'s author')
  t.same(await remaining(), [first, second, third])

  t.equal((await bob.call('DELETE', `/comments/${first}`, undefined, { 'if-match': '"stale"' })).statusCode, 412)
  const del = await bob.call('DELETE', `/comments/${first}`)
  t.equal(del.statusCode, 204)
  t.equal(del.body, '')
  t.equal((await bob.call('DELETE', `/comments/${first}`)).statusCode, 404)
  t.same(body(await carol.call('DELETE', '/comments/999')), { error: 'comment not found' })
  t.equal((await admin('DELETE', `/comments/${second}`)).statusCode, 204, 'an admin may delete any comment')
  t.equal((await bob.call('DELETE', `/comments/${third}`, undefined, { 'if-match': '*' })).statusCode, 204)
  t.same(await remaining(), [])
  t.equal(body(await bob.call('DELETE', '/comments/x')).field, 'id')
})
