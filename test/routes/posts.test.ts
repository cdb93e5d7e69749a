import Fastify, { type LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import t from 'tap'
import { adminToken, apiClient, body, build, failRecording, signedIn, testDb } from '../helpers/app.js'
import { restScope } from '../../app/rest.js'
import { conflict } from '../../schema/errors.js'
import { recordSql } from '../helpers/sql-log.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]
type Post = { id: number, author_id: number, title: string, content: string, created_at: string, updated_at: string }
type Page = { data: Array<Record<string, unknown> & { id: number }>, pagination: { hasMore: boolean, nextCursor: string | null, limit: number, total?: number } }

async function setup (t: Test, options: Parameters<typeof build>[1] = {}) {
  const app = await build(t, options)
  const alice = await signedIn(app, { name: 'Alice', email: 'alice@example.com' })
  const bob = await signedIn(app, { name: 'Bob', email: 'bob@example.com' })
  return {
    app,
    alice: { ...alice, call: apiClient(app, alice.headers) },
    bob: { ...bob, call: apiClient(app, bob.headers) },
    admin: apiClient(app, await adminToken(app)),
    anonymous: apiClient(app),
    forged: apiClient(app, { authorization: 'Bearer not.a.token' })
  }
}

const newPost = { title: 'Hello', content: 'First post' }

async function unauthorized (t: Test, res: LightMyRequestResponse, what: string) {
  t.equal(res.statusCode, 401, what)
  t.equal(res.headers['www-authenticate'], 'Bearer', what)
  t.type(body(res).error, 'string', what)
}

t.test('POST /posts writes a post by the caller: 201, Location, representation, row', async (t) => {
  const { app, alice, anonymous, forged } = await setup(t)
  const res = await alice.call('POST', '/posts', newPost)
  t.equal(res.statusCode, 201)
  const post = body<Post>(res)
  t.same(Object.keys(post), ['id', 'author_id', 'title', 'content', 'created_at', 'updated_at'])
  t.match(post, { author_id: alice.id, title: 'Hello', content: 'First post' })
  t.match(post.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.equal(res.headers.location, `/api/v1/posts/${post.id}`)
  const row = await app.db.selectFrom('posts').selectAll().where('id', '=', post.id).executeTakeFirstOrThrow()
  t.match(row, { author_id: alice.id, title: 'Hello', content: 'First post' })

  await unauthorized(t, await anonymous('POST', '/posts', newPost), 'no token')
  await unauthorized(t, await forged('POST', '/posts', newPost), 'bad token')
  t.equal(Number((await app.db.selectFrom('posts').select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow()).n), 1)
})

t.test('regression: the styles disagreed on who may post as another user; now an admin may in both, others in neither', async (t) => {
  const { app, alice, bob, admin } = await setup(t)
  const asBob = await admin('POST', '/posts', { ...newPost, author_id: bob.id })
  t.equal(asBob.statusCode, 201, 'REST: an administrator names the author')
  t.equal(body<Post>(asBob).author_id, bob.id)
  const refused = await alice.call('POST', '/posts', { ...newPost, author_id: bob.id })
  t.equal(refused.statusCode, 403)
  t.same(body(refused), { error: 'only an administrator may post as another user' })
  t.equal((await alice.call('POST', '/posts', { ...newPost, author_id: alice.id })).statusCode, 201, 'naming oneself is fine')
  const bad = await alice.call('POST', '/posts', { ...newPost, author_id: 0 })
  t.equal(bad.statusCode, 400)
  t.equal(body(bad).field, 'author_id')
  const count = await app.db.selectFrom('posts').select(sql<number>`count(*)`.as('n')).where('author_id', '=', bob.id).executeTakeFirstOrThrow()
  t.equal(Number(count.n), 1, 'only the admin\'s post is Bob\'s')
})

t.test('an idempotent POST /posts tells subscribers only once it is committed', async (t) => {
  const app = await build(t)
  const writer = await signedIn(app)
  const told: string[] = []
  app.tandemEvents.emitter.on('postCreated', (message, done) => {
    told.push((message.payload as { post: { title: string } }).post.title)
    done()
  })
  const post = (title: string, key: string) => app.inject({
    method: 'POST', url: '/api/v1/posts', headers: { ...writer.headers, 'idempotency-key': key }, payload: { title, content: 'c' }
  })
  // The answer cannot be recorded, so the post is undone: nobody may hear of it.
  await failRecording(t, app, 'doomed')
  t.equal((await post('Undone', 'doomed')).statusCode, 500)
  t.equal((await post('Kept', 'kept')).statusCode, 201)
  await new Promise((resolve) => setImmediate(resolve))
  t.same(told, ['Kept'], 'only the committed post is announced')
  t.same((await app.db.selectFrom('posts').select('title').execute()).map((p) => p.title), ['Kept'])
})

t.test('afterCommit waits for the key\'s transaction only on routes that write in it', async (t) => {
  const app = Fastify()
  app.decorate('db', await testDb())
  const ran: string[] = []
  await app.register(async (scope) => {
    await restScope(scope)
    for (const transaction of [false, true]) {
      scope.post(`/refused-${String(transaction)}`, { config: { transaction } }, async (request) => {
        request.afterCommit(() => ran.push(`transaction: ${String(transaction)}`))
        throw conflict('refused after writing')
      })
    }
  })
  t.teardown(async () => app.close())
  for (const route of ['/refused-false', '/refused-true']) {
    const res = await app.inject({ method: 'POST', url: route, headers: { 'idempotency-key': `k${route}` }, payload: {} })
    t.equal(res.statusCode, 409, route)
  }
  t.same(ran, ['transaction: false'], 'a write outside the transaction is committed already; one inside is rolled back')
})

t.test('POST and PUT /posts validate the body, naming the field', async (t) => {
  const { alice } = await setup(t)
  const cases: Array<[object, string]> = [
    [{ content: 'x' }, 'title'],
    [{ title: 'x' }, 'content'],
    [{ title: '', content: 'x' }, 'title'],
    [{ title: 'x'.repeat(301), content: 'x' }, 'title'],
    [{ title: 'x', content: '' }, 'content'],
    [{ title: 'x', content: 'x'.repeat(100_001) }, 'content'],
    [{ title: 'x', content: 'x', views: 2 }, 'views'],
    [{ title: 7, content: 'x' }, 'title']
  ]
  const { id } = body<Post>(await alice.call('POST', '/posts', newPost))
  for (const [payload, field] of cases) {
    for (const [method, url] of [['POST', '/posts'], ['PUT', `/posts/${id}`]] as const) {
      const res = await alice.call(method, url, payload)
      t.equal(res.statusCode, 400, `${method} ${JSON.stringify(payload).slice(0, 60)}`)
      t.equal(body(res).field, field)
    }
  }
  t.equal((await alice.call('POST', '/posts', { title: 'x'.repeat(300), content: 'x'.repeat(100_000) })).statusCode, 201, 'the limits themselves are fine')
  const move = await alice.call('PUT', `/posts/${id}`, { title: 'x', content: 'x', author_id: 2 })
  t.equal(move.statusCode, 400, 'a post never changes author')
  t.equal(body(move).field, 'author_id')
  const patch = await alice.call('PATCH', `/posts/${id}`, { title: 'x', views: 3 })
  t.equal(patch.statusCode, 400)
  t.equal(body(patch).field, 'views')
})

t.test('GET /posts/{id}: representation, fields, include, ETag and 304, 401, 404, 400', async (t) => {
  const { app, alice, bob, anonymous, forged } = await setup(t)
  const post = body<Post>(await alice.call('POST', '/posts', newPost))
  await bob.call('POST', `/posts/${post.id}/comments`, { text: 'Nice' })

  const res = await bob.call('GET', `/posts/${post.id}`)
  t.equal(res.statusCode, 200)
  t.same(body(res), post)
  const etag = res.headers.etag as string
  t.match(etag, /^"[\w-]+"$/, 'a strong ETag')
  const again = await bob.call('GET', `/posts/${post.id}`, undefined, { 'if-none-match': etag })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
  t.equal((await bob.call('GET', `/posts/${post.id}`, undefined, { 'if-none-match': '"stale"' })).statusCode, 200)

  t.same(body(await bob.call('GET', `/posts/${post.id}?fields=title`)), { id: post.id, title: 'Hello' })
  const included = body(await bob.call('GET', `/posts/${post.id}?include=author,comments&fields=title`))
  t.same(Object.keys(included).sort(), ['author', 'comments', 'id', 'title'], 'author_id is used, not shown')
  // Bob reads Alice's post: her email is hers and administrators' only (issue 37).
  t.same(included.author, { id: alice.id, name: 'Alice', email: null, created_at: (included.author as { created_at: string }).created_at })
  t.match(included.comments, [{ post_id: post.id, author_id: bob.id, text: 'Nice' }])

  for (const [query, field] of [['fields=nope', 'fields'], ['include=nope', 'include'], ['other=1', 'other']] as const) {
    const bad = await bob.call('GET', `/posts/${post.id}?${query}`)
    t.equal(bad.statusCode, 400, query)
    t.equal(body(bad).field, field, query)
  }
  for (const id of ['abc', '0', '-1', '1.5']) {
    const bad = await bob.call('GET', `/posts/${id}`)
    t.equal(bad.statusCode, 400, id)
    t.equal(body(bad).field, 'id')
  }
  const missing = await bob.call('GET', '/posts/999')
  t.equal(missing.statusCode, 404)
  t.same(body(missing), { error: 'post not found' })
  await unauthorized(t, await anonymous('GET', `/posts/${post.id}`), 'no token')
  await unauthorized(t, await forged('GET', `/posts/${post.id}`), 'bad token')
  await unauthorized(t, await anonymous('GET', '/posts/999'), 'unknown id without a token')
  t.equal((await app.inject({ url: `/api/posts/${post.id}`, headers: { ...bob.headers } })).statusCode, 200, 'unversioned alias')
})

t.test('PUT and PATCH /posts/{id}: author or admin; 403, 404, 401; ETag of the new version', async (t) => {
  const { app, alice, bob, admin, anonymous } = await setup(t)
  const post = body<Post>(await alice.call('POST', '/posts', newPost))
  const url = `/posts/${post.id}`

  const put = await alice.call('PUT', url, { title: 'Replaced', content: 'New content' })
  t.equal(put.statusCode, 200)
  const replaced = body<Post>(put)
  t.match(replaced, { id: post.id, author_id: alice.id, title: 'Replaced', content: 'New content', created_at: post.created_at })
  t.ok(replaced.updated_at >= post.updated_at, 'updated_at moves on')
  t.equal(put.headers.etag, (await alice.call('GET', url)).headers.etag, 'the ETag of the answer is that of the new version')

  const patch = await alice.call('PATCH', url, { content: 'Patched' })
  t.equal(patch.statusCode, 200)
  t.match(body(patch), { title: 'Replaced', content: 'Patched' })
  t.equal(patch.headers.etag, (await alice.call('GET', url)).headers.etag)

  for (const [method, payload] of [['PUT', newPost], ['PATCH', { title: 'Mine now' }]] as const) {
    const denied = await bob.call(method, url, payload)
    t.equal(denied.statusCode, 403, `${method} by another user`)
    t.type(body(denied).error, 'string')
    await unauthorized(t, await anonymous(method, url, payload), `${method} without a token`)
    t.equal((await bob.call(method, '/posts/999', payload)).statusCode, 404, `${method} of an unknown post`)
    t.equal((await admin(method, '/posts/999', payload)).statusCode, 404, `${method} of an unknown post by an admin`)
  }
  const byAdmin = await admin('PATCH', url, { title: 'Moderated' })
  t.equal(byAdmin.statusCode, 200)
  t.equal(body(byAdmin).author_id, alice.id, 'the author stays')
  const row = await app.db.selectFrom('posts').selectAll().where('id', '=', post.id).executeTakeFirstOrThrow()
  t.match(row, { title: 'Moderated', content: 'Patched', author_id: alice.id })
})

t.test('If-Match: a stale ETag is 412 and changes nothing; a current one writes', async (t) => {
  const { app, alice } = await setup(t)
  const post = body<Post>(await alice.call('POST', '/posts', newPost))
  const url = `/posts/${post.id}`
  const etag = (await alice.call('GET', url)).headers.etag as string

  const fresh = await alice.call('PATCH', url, { title: 'First edit' }, { 'if-match': etag })
  t.equal(fresh.statusCode, 200)
  const stale = await alice.call('PUT', url, { title: 'Lost update', content: 'x' }, { 'if-match': etag })
  t.equal(stale.statusCode, 412)
  t.type(body(stale).error, 'string')
  t.equal((await alice.call('PATCH', url, { title: 'Lost update' }, { 'if-match': etag })).statusCode, 412)
  t.equal((await alice.call('DELETE', url, undefined, { 'if-match': etag })).statusCode, 412)
  const row = await app.db.selectFrom('posts').select('title').where('id', '=', post.id).executeTakeFirstOrThrow()
  t.equal(row.title, 'First edit')

  t.equal((await alice.call('PUT', url, newPost, { 'if-match': fresh.headers.etag as string })).statusCode, 200)
  t.equal((await alice.call('PATCH', url, { title: 'Any' }, { 'if-match': '*' })).statusCode, 200)
  const current = (await alice.call('GET', url)).headers.etag as string
  t.equal((await alice.call('DELETE', url, undefined, { 'if-match': current })).statusCode, 204)
})

t.test('DELETE /posts/{id}: author or admin, 204, and the comments go with it', async (t) => {
  const { app, alice, bob, admin, anonymous } = await setup(t)
  const post = body<Post>(await alice.call('POST', '/posts', newPost))
  const other = body<Post>(await alice.call('POST', '/posts', newPost))
  await bob.call('POST', `/posts/${post.id}/comments`, { text: 'one' })
  await bob.call('POST', `/posts/${other.id}/comments`, { text: 'two' })

  await unauthorized(t, await anonymous('DELETE', `/posts/${post.id}`), 'no token')
  t.equal((await bob.call('DELETE', `/posts/${post.id}`)).statusCode, 403)
  const del = await alice.call('DELETE', `/posts/${post.id}`)
  t.equal(del.statusCode, 204)
  t.equal(del.body, '')
  t.equal((await alice.call('GET', `/posts/${post.id}`)).statusCode, 404)
  t.equal((await alice.call('DELETE', `/posts/${post.id}`)).statusCode, 404)
  const comments = await app.db.selectFrom('comments').select(['post_id', 'text']).execute()
  t.same(comments, [{ post_id: other.id, text: 'two' }], "the deleted post's comments are gone, others stay")

  t.equal((await admin('DELETE', `/posts/${other.id}`)).statusCode, 204, 'an admin may delete any post')
  t.equal((await admin('DELETE', '/posts/999')).statusCode, 404)
})

/** 25 posts: alternately by alice and bob, few distinct titles and timestamps (the id breaks ties). */
async function seedPosts (authors: [number, number]): Promise<void> {
  const db = await testDb()
  await db.insertInto('posts').values(Array.from({ length: 25 }, (_, i) => ({
    author_id: authors[i % 2] as number,
    title: ['Gamma', 'alpha', 'Beta'][i % 3] as string,
    content: i % 5 === 0 ? `Notes on kysely number ${i}` : `Plain text ${i}`
  }))).execute()
  await sql`update posts set created_at = timestamptz '2026-01-01' + (id % 4) * interval '1 hour'`.execute(db)
}

/** Follows `nextCursor` to the end; checks the Link header on the way. */
async function walk (t: Test, call: ReturnType<typeof apiClient>, url: string): Promise<Page['data']> {
  const seen: Page['data'] = []
  let next: string | null = url
  for (let guard = 0; next !== null && guard < 100; guard++) {
    const res = await call('GET', next)
    t.equal(res.statusCode, 200, next)
    const page = body<Page>(res)
    seen.push(...page.data)
    const cursor = page.pagination.nextCursor
    if (cursor === null) {
      t.equal(res.headers.link, undefined)
      next = null
    } else {
      t.match(res.headers.link, /rel="next"/)
      next = `${url}${url.includes('?') ? '&' : '?'}cursor=${encodeURIComponent(cursor)}`
    }
  }
  return seen
}

t.test('GET /posts pages by keyset through every post, in any sort', async (t) => {
  const { app, alice, bob, anonymous } = await setup(t)
  await seedPosts([alice.id, bob.id])
  const all = await app.db.selectFrom('posts').select(['id', 'title', 'created_at', 'author_id']).execute()

  const byId = await walk(t, alice.call, '/posts?limit=10')
  t.same(byId.map((p) => p.id), all.map((p) => p.id).sort((a, b) => a - b))

  const expected = (key: (p: typeof all[number]) => string | number, sign: 1 | -1) => [...all]
    .sort((a, b) => key(a) === key(b) ? (a.id - b.id) * sign : (key(a) < key(b) ? -sign : sign)).map((p) => p.id)
  const titles = await walk(t, alice.call, '/posts?limit=7&sort=-title')
  t.same(titles.map((p) => p.id), expected((p) => p.title, -1), 'sort=-title, ties by id')
  const dates = await walk(t, alice.call, '/posts?limit=6&sort=created_at&order=desc&fields=title')
  t.same(dates.map((p) => p.id), expected((p) => p.created_at.getTime(), -1), 'sort=created_at&order=desc')
  t.same(Object.keys(dates[0] ?? {}), ['id', 'title'], 'fields narrows the rows, the sort column is not added')

  const bobs = await walk(t, alice.call, `/posts?author_id=${bob.id}&limit=5&sort=-created_at`)
  t.same(bobs.map((p) => p.id).sort((a, b) => a - b), all.filter((p) => p.author_id === bob.id).map((p) => p.id))

  const found = body<Page>(await alice.call('GET', '/posts?q=KYSELY&total=true'))
  t.same(found.data.map((p) => p.id), [1, 6, 11, 16, 21], 'q matches part of the content, case-insensitively')
  t.equal(found.pagination.total, 5)
  t.same(body<Page>(await alice.call('GET', '/posts?q=amm')).data.length, 9, 'q matches part of a title')
  t.same(body<Page>(await alice.call('GET', '/posts?q=100%25')).data, [], 'the user\'s % is not a wildcard')

  const numbered = body<{ data: unknown[], meta: unknown }>(await alice.call('GET', '/posts?page=3&limit=10'))
  t.same(numbered.meta, { page: 3, limit: 10, total: 25 })
  t.equal(numbered.data.length, 5)

  const first = body<Page>(await alice.call('GET', '/posts?limit=5&sort=title'))
  const cursor = encodeURIComponent(first.pagination.nextCursor as string)
  for (const [query, field] of [
    [`sort=title&author_id=${alice.id}&cursor=${cursor}`, 'cursor'],
    [`sort=id&cursor=${cursor}`, 'cursor'],
    [`cursor=${cursor}&page=2`, 'cursor'],
    ['cursor=garbage', 'cursor'],
    ['sort=content', 'sort'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['author_id=x', 'author_id'],
    ['fields=title,secret', 'fields'],
    ['include=author,likes', 'include']
  ] as const) {
    const res = await alice.call('GET', `/posts?${query}`)
    t.equal(res.statusCode, 400, query)
    t.equal(body(res).field, field, query)
  }
  await unauthorized(t, await anonymous('GET', '/posts'), 'no token')
})

t.test('include=author,comments adds one statement per relation, not one per post', async (t) => {
  const recorded = recordSql(await testDb())
  const { alice, bob } = await setup(t, { db: recorded.db })
  await seedPosts([alice.id, bob.id])
  await recorded.db.insertInto('comments').values(Array.from({ length: 28 }, (_, i) => ({
    post_id: i < 25 ? 1 : 2, author_id: bob.id, text: `comment ${i}`
  }))).execute()
  const ours = () => recorded.statements.filter((s) => /"(posts|comments|users)"/.test(s))

  recorded.statements.length = 0
  const plain = await alice.call('GET', '/posts?limit=20')
  t.equal(plain.statusCode, 200)
  t.equal(ours().length, 1, 'a list is one statement')

  recorded.statements.length = 0
  const res = await alice.call('GET', '/posts?limit=20&include=author,comments&fields=title')
  t.equal(res.statusCode, 200)
  t.equal(ours().length, 3, `the list, the authors, the comments: ${ours().join(' | ')}`)
  const page = body<Page>(res).data as Array<{ id: number, title: string, author: { id: number, name: string }, comments: Array<{ id: number, post_id: number }> }>
  t.equal(page.length, 20)
  for (const post of page) {
    t.equal(post.author.id, post.id % 2 === 1 ? alice.id : bob.id)
    t.same(Object.keys(post.author).sort(), ['created_at', 'email', 'id', 'name'], 'the public representation of a user')
    t.ok(post.comments.every((c) => c.post_id === post.id))
  }
  t.equal(page[1]?.comments.length, 3)
  const first = page[0]?.comments ?? []
  t.equal(first.length, 20, 'embedded lists stop at 20')
  t.same(first.map((c) => c.id), [...first.map((c) => c.id)].sort((a, b) => a - b), 'the first comments, by id')
  t.same(page[5]?.comments, [], 'a post without comments embeds an empty list')

  recorded.statements.length = 0
  t.equal((await alice.call('GET', '/posts/1?include=author,comments')).statusCode, 200)
  t.equal(ours().length, 3, 'a single post with both relations is three statements')
})

t.test('GET /users/{id}/posts lists one author\'s posts; unknown user 404', async (t) => {
  const { app, alice, bob, anonymous } = await setup(t)
  await seedPosts([alice.id, bob.id])
  const mine = await walk(t, bob.call, `/users/${alice.id}/posts?limit=4&sort=-created_at&fields=author_id`)
  t.equal(mine.length, 13)
  t.ok(mine.every((p) => p.author_id === alice.id))

  const withAuthor = body<Page>(await bob.call('GET', `/users/${alice.id}/posts?limit=2&include=author`))
  t.match(withAuthor.data, [{ author: { id: alice.id, name: 'Alice' } }, { author: { id: alice.id } }])
  const searched = body<Page>(await bob.call('GET', `/users/${alice.id}/posts?q=kysely`))
  t.same(searched.data.map((p) => p.id), [1, 11, 21])

  const { id: quiet } = await signedIn(app)
  t.same(body<Page>(await bob.call('GET', `/users/${quiet}/posts`)).data, [], 'a user without posts: an empty list')

  const unknown = await bob.call('GET', '/users/999/posts')
  t.equal(unknown.statusCode, 404)
  t.same(body(unknown), { error: 'user not found' })
  t.equal(body(await bob.call('GET', `/users/${alice.id}/posts?author_id=2`)).field, 'author_id', 'the path says the author')
  await unauthorized(t, await anonymous('GET', `/users/${alice.id}/posts`), 'no token')
})
