import t from 'tap'
import { adminToken, authHeaders, body, build, signedIn } from '../helpers/app.js'

const ada = { name: 'Ada Lovelace', email: 'ada@example.com' }

t.test('POST /api/v1/users creates a user and returns its representation', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { ...ada, password: 'analytical-engine' } })
  t.equal(res.statusCode, 201)
  const user = body(res)
  t.same(Object.keys(user).sort(), ['created_at', 'email', 'id', 'name'])
  t.equal(user.name, ada.name)
  t.equal(typeof user.id, 'number')
  t.match(user.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.equal(res.headers.location, `/api/v1/users/${user.id as number}`)
  const profile = await app.db.selectFrom('profiles').selectAll().where('user_id', '=', user.id as number).executeTakeFirst()
  t.ok(profile, 'an empty profile is created with the user')
  const row = await app.db.selectFrom('users').select('password_hash').where('id', '=', user.id as number).executeTakeFirstOrThrow()
  t.match(row.password_hash, /^\$argon2id\$/, 'the password is stored hashed')
})

t.test('a duplicate email is 409 on email, whatever its case', async (t) => {
  const app = await build(t)
  await app.inject({ method: 'POST', url: '/api/v1/users', payload: ada })
  const res = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'Other', email: 'ADA@Example.com' } })
  t.equal(res.statusCode, 409)
  t.same(body(res), { error: 'email already exists', field: 'email' })
})

t.test('invalid bodies are 400 naming the field', async (t) => {
  const app = await build(t)
  const cases: Array<[unknown, string]> = [
    [{ email: 'a@b.io' }, 'name'],
    [{ name: 'A', email: 'not-an-email' }, 'email'],
    [{ name: 'A', email: 'a@b.io', password: 'short' }, 'password'],
    [{ name: 'A', email: 'a@b.io', role: 'admin' }, 'role'],
    [{ name: 12, email: 'a@b.io' }, 'name']
  ]
  for (const [payload, field] of cases) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/users', payload: payload as object })
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.equal(body(res).field, field)
    t.type(body(res).error, 'string')
    t.match(res.headers['content-type'], /^application\/json/)
  }
})

t.test('GET, PUT, PATCH and DELETE a user', async (t) => {
  const app = await build(t)
  const { headers, ...me } = await signedIn(app, ada)
  const url = `/api/v1/users/${me.id}`
  const created = body((await app.inject({ url, headers })))

  const got = await app.inject({ url, headers })
  t.equal(got.statusCode, 200)
  t.same(body(got), { id: me.id, ...ada, created_at: created.created_at })

  const narrowed = await app.inject({ url: url + '?fields=name', headers })
  t.same(body(narrowed), { id: me.id, name: ada.name })

  const put = await app.inject({ method: 'PUT', url, headers, payload: { name: 'Ada King', email: 'king@example.com', current_password: me.password } })
  t.equal(put.statusCode, 200)
  t.same(body(put), { ...created, name: 'Ada King', email: 'king@example.com' })

  const putMissing = await app.inject({ method: 'PUT', url, headers, payload: { name: 'Only name' } })
  t.equal(putMissing.statusCode, 400)
  t.equal(body(putMissing).field, 'email')

  const patch = await app.inject({ method: 'PATCH', url, headers, payload: { name: 'Countess' } })
  t.equal(patch.statusCode, 200)
  t.equal(body(patch).name, 'Countess')
  t.equal(body(patch).email, 'king@example.com')

  const del = await app.inject({ method: 'DELETE', url, headers })
  t.equal(del.statusCode, 204)
  t.equal(del.body, '')
  const admin = await adminToken(app)
  t.equal((await app.inject({ url, headers: admin })).statusCode, 404)
  t.equal((await app.inject({ method: 'DELETE', url, headers: admin })).statusCode, 404)
  t.equal(await app.db.selectFrom('profiles').select('user_id').where('user_id', '=', me.id).executeTakeFirst(), undefined, 'profile went with the user')
})

t.test('path ids that are not positive integers are 400 on id', async (t) => {
  const app = await build(t)
  for (const id of ['abc', '0', '-1', '1.5', '99999999999999999999']) {
    const res = await app.inject({ url: `/api/v1/users/${id}`, headers: await authHeaders(app) })
    t.equal(res.statusCode, 400, id)
    t.equal(body(res).field, 'id', id)
  }
})

t.test('who may call each users endpoint: 401 without a valid token, 403 when not allowed', async (t) => {
  const app = await build(t)
  const me = await signedIn(app, { email: 'me@example.com' })
  const other = await signedIn(app, { email: 'other@example.com' })
  const admin = await adminToken(app)
  const mine = `/api/v1/users/${me.id}`
  const theirs = `/api/v1/users/${other.id}`
  const change = { name: 'Changed', email: 'changed@example.com' }

  const protectedCalls = [
    { method: 'GET' as const, url: '/api/v1/users' },
    { method: 'GET' as const, url: mine },
    { method: 'PUT' as const, url: mine, payload: change },
    { method: 'PATCH' as const, url: mine, payload: { name: 'Changed' } },
    { method: 'DELETE' as const, url: mine },
    { method: 'POST' as const, url: `${mine}/verify-email` },
    { method: 'POST' as const, url: `${mine}/reset-password` }
  ]
  for (const call of protectedCalls) {
    const res = await app.inject(call)
    t.equal(res.statusCode, 401, `${call.method} ${call.url} without a token`)
    t.equal(res.headers['www-authenticate'], 'Bearer')
    t.match(res.headers['content-type'], /^application\/json/)
    t.same(Object.keys(body(res)), ['error'])
  }
  // Authentication comes before the body is read or validated.
  const noBody = await app.inject({ method: 'PUT', url: mine })
  t.equal(noBody.statusCode, 401, 'PUT without a token or a body is 401, not 400')

  t.equal((await app.inject({ url: '/api/v1/users', headers: me.headers })).statusCode, 200, 'any signed-in user lists users')
  t.equal((await app.inject({ url: theirs, headers: me.headers })).statusCode, 200, 'and reads another user')

  for (const call of [
    { method: 'PUT' as const, url: theirs, payload: change },
    { method: 'PATCH' as const, url: theirs, payload: { name: 'Changed' } },
    { method: 'DELETE' as const, url: theirs },
    { method: 'POST' as const, url: `${theirs}/verify-email` },
    { method: 'POST' as const, url: `${theirs}/reset-password` },
    { method: 'DELETE' as const, url: '/api/v1/users/999' }
  ]) {
    const res = await app.inject({ ...call, headers: me.headers })
    t.equal(res.statusCode, 403, `${call.method} ${call.url} by another user`)
    t.same(Object.keys(body(res)), ['error'])
  }
  t.equal(body(await app.inject({ url: theirs, headers: admin })).name, other.name, 'nothing changed')

  t.equal((await app.inject({ method: 'PATCH', url: mine, headers: me.headers, payload: { name: 'Me' } })).statusCode, 200, 'self may')
  t.equal((await app.inject({ method: 'PATCH', url: theirs, headers: admin, payload: { name: 'Them' } })).statusCode, 200, 'an admin may')
  t.equal((await app.inject({ method: 'PATCH', url: '/api/v1/users/999', headers: admin, payload: { name: 'X' } })).statusCode, 404, 'an unknown id is 404 once allowed')
  t.equal((await app.inject({ method: 'DELETE', url: theirs, headers: admin })).statusCode, 204)
})

t.test('unknown routes are 404 with or without a token', async (t) => {
  const app = await build(t)
  const headers = await authHeaders(app)
  for (const url of ['/api/v1/nope', '/api/v1/users/1/nope']) {
    t.equal((await app.inject({ url })).statusCode, 404, url)
    t.equal((await app.inject({ url, headers })).statusCode, 404, `${url} with a token`)
    t.equal((await app.inject({ url, headers: { authorization: 'Bearer garbage' } })).statusCode, 404, `${url} with a bad token`)
  }
})

t.test('sign-up is public, its password optional but at least 8 characters, and there is no role to send', async (t) => {
  const app = await build(t)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'No password', email: 'np@example.com' } })).statusCode, 201)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'Short', email: 's@example.com', password: '1234567' } })).statusCode, 400)
  const me = await signedIn(app)
  const res = await app.inject({ method: 'PATCH', url: `/api/v1/users/${me.id}`, headers: me.headers, payload: { role: 'admin' } })
  t.equal(res.statusCode, 400)
  t.equal(body(res).field, 'role')
  const row = await app.db.selectFrom('users').select('role').where('id', '=', me.id).executeTakeFirstOrThrow()
  t.equal(row.role, 'user')
})

t.test('include=posts,profile embeds relations with one statement each, on lists and single GETs', async (t) => {
  const app = await build(t)
  const ada = await signedIn(app, { email: 'ada@example.com' })
  await signedIn(app, { email: 'bob@example.com' })
  for (let i = 0; i < 25; i++) {
    await app.inject({ method: 'POST', url: '/api/v1/posts', headers: ada.headers, payload: { title: `Post ${i}`, content: 'text' } })
  }
  await app.inject({ method: 'PATCH', url: `/api/v1/users/${ada.id}/profile`, headers: ada.headers, payload: { location: 'London' } })

  const list = await app.inject({ url: '/api/v1/users?include=posts,profile&sort=id', headers: ada.headers })
  t.equal(list.statusCode, 200)
  const users = body<{ data: Array<{ id: number, posts: Array<{ title: string }>, profile: { location: string | null } }> }>(list).data
  t.equal(users[0]?.posts.length, 20, 'embedded lists stop at 20')
  t.equal(users[0]?.posts[0]?.title, 'Post 0')
  t.equal(users[0]?.profile.location, 'London')
  t.same(users[1]?.posts, [])

  const single = await app.inject({ url: `/api/v1/users/${ada.id}?include=profile&fields=name`, headers: ada.headers })
  t.same(Object.keys(body(single)).sort(), ['id', 'name', 'profile'])

  const bad = await app.inject({ url: '/api/v1/users?include=orders', headers: ada.headers })
  t.equal(bad.statusCode, 400)
  t.equal(body(bad).field, 'include')
})

t.test('conditional requests: ETag, 304 on If-None-Match, 412 on a stale If-Match', async (t) => {
  const app = await build(t)
  const ada = await signedIn(app)
  const url = `/api/v1/users/${ada.id}`
  const first = await app.inject({ url, headers: ada.headers })
  const etag = first.headers.etag as string
  t.match(etag, /^"[\w-]+"$/, 'a strong ETag')

  const unchanged = await app.inject({ url, headers: { ...ada.headers, 'if-none-match': etag } })
  t.equal(unchanged.statusCode, 304)
  t.equal(unchanged.body, '')

  const patched = await app.inject({ method: 'PATCH', url, headers: { ...ada.headers, 'if-match': etag }, payload: { name: 'First writer' } })
  t.equal(patched.statusCode, 200)
  t.not(patched.headers.etag, etag, 'a new ETag for the new representation')

  const stale = await app.inject({ method: 'PATCH', url, headers: { ...ada.headers, 'if-match': etag }, payload: { name: 'Lost update' } })
  t.equal(stale.statusCode, 412)
  t.type(body(stale).error, 'string')
  const row = await app.db.selectFrom('users').select('name').where('id', '=', ada.id).executeTakeFirstOrThrow()
  t.equal(row.name, 'First writer', 'the stale write changed nothing')

  const staleDelete = await app.inject({ method: 'DELETE', url, headers: { ...ada.headers, 'if-match': etag } })
  t.equal(staleDelete.statusCode, 412)
  const fresh = await app.inject({ method: 'DELETE', url, headers: { ...ada.headers, 'if-match': patched.headers.etag as string } })
  t.equal(fresh.statusCode, 204)
})

t.test('Idempotency-Key: a retried sign-up returns the first response without a second write', async (t) => {
  const app = await build(t)
  const payload = { name: 'Retry', email: 'retry@example.com' }
  const headers = { 'idempotency-key': 'signup-1' }
  const first = await app.inject({ method: 'POST', url: '/api/v1/users', headers, payload })
  const again = await app.inject({ method: 'POST', url: '/api/v1/users', headers, payload })
  t.equal(first.statusCode, 201)
  t.equal(again.statusCode, 201)
  t.equal(again.body, first.body)
  t.equal(again.headers.location, first.headers.location)
  t.equal(again.headers['idempotent-replayed'], 'true')
  const other = await app.inject({ method: 'POST', url: '/api/v1/users', headers, payload: { ...payload, name: 'Other body' } })
  t.equal(other.statusCode, 422)
  t.equal(body(other).field, 'Idempotency-Key')
  const rows = await app.db.selectFrom('users').select('id').where('email', '=', payload.email).execute()
  t.equal(rows.length, 1, 'one user written')

  const failed = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { 'idempotency-key': 'k2' }, payload: { ...payload } })
  t.equal(failed.statusCode, 409, 'a failed request is not stored…')
  const retried = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { 'idempotency-key': 'k2' }, payload: { ...payload, email: 'new@example.com' } })
  t.equal(retried.statusCode, 201, '…so its key is free for the corrected retry')
})

t.test('Link rel="next" is the request\'s own URL with its page position replaced', async (t) => {
  const app = await build(t)
  const { headers } = await signedIn(app, { name: 'Zed', email: 'zed@example.com' })
  for (const n of [1, 2, 3, 4, 5]) await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: `Link ${n}`, email: `link${n}@example.com` } })
  const linkOf = (res: { headers: Record<string, unknown> }): string => {
    const match = /^<([^>]+)>; rel="next"$/.exec(String(res.headers.link))
    t.ok(match, String(res.headers.link))
    return match?.[1] ?? ''
  }
  const names = (res: { body: string }) => body<{ data: Array<{ name: string }> }>(res as never).data.map((u) => u.name)

  const first = await app.inject({ url: '//api/v1/users?limit=2&sort=name&q=Link+&fields=name', headers })
  t.same(names(first), ['Link 1', 'Link 2'])
  const next = linkOf(first)
  t.match(next, /^\/api\/v1\/users\?limit=2&sort=name&q=Link\+&fields=name&cursor=[\w-]+\.[\w-]{16}$/, 'the other parameters as sent, one path slash')
  const second = await app.inject({ url: next, headers })
  t.same(names(second), ['Link 3', 'Link 4'])
  const after = linkOf(second)
  t.equal(after.match(/cursor=/g)?.length, 1, 'the old cursor is replaced, not repeated')
  t.same(names(await app.inject({ url: after, headers })), ['Link 5'])

  const cursor = /cursor=([^&]+)/.exec(next)?.[1] ?? ''
  const encoded = linkOf(await app.inject({ url: `/api/v1/users?limit=2&sort=name&q=Link+&fields=name&%63ursor=${cursor}`, headers }))
  t.notMatch(encoded, /%63ursor/, 'a percent-encoded parameter name counts as the same parameter')
  t.same(names(await app.inject({ url: encoded, headers })), ['Link 5'])

  t.match(linkOf(await app.inject({ url: '/api/v1/users?limit=2&page=1&q=Link+', headers })), /^\/api\/v1\/users\?limit=2&q=Link\+&page=2$/)
  t.match(linkOf(await app.inject({ url: '/api/v1/users?offset=1&limit=2&q=Link+', headers })), /^\/api\/v1\/users\?limit=2&q=Link\+&offset=3$/)
  t.equal((await app.inject({ url: '/api/v1/users?limit=2&page=3&q=Link+', headers })).headers.link, undefined, 'no Link on the last page')
  const oddName = 'Odd <"é 😀>'
  for (const n of [1, 2]) await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: oddName, email: `odd${n}@example.com` } })
  const odd = await app.inject({ url: `/api/v1/users?limit=1&name=${oddName}`, headers })
  t.equal(odd.statusCode, 200, odd.body)
  const oddNext = linkOf(odd)
  t.notMatch(oddNext, /[<>"\s]|[^\x21-\x7e]/, 'nothing in the link can end it early or is not ASCII')
  const oddSecond = await app.inject({ url: oddNext, headers })
  t.same(names(oddSecond), [oddName], 'and it still brings the next page')
  t.not(body<{ data: Array<{ id: number }> }>(oddSecond).data[0]?.id, body<{ data: Array<{ id: number }> }>(odd).data[0]?.id)
})

t.test('q needs at least 3 characters: shorter text would match nearly every row with no index to help', async (t) => {
  const app = await build(t)
  const { headers } = await signedIn(app)
  for (const url of ['/api/v1/users?q=ab', '/api/v1/posts?q=x', '/api/v1/products?q=ab']) {
    const res = await app.inject({ url, headers })
    t.equal(res.statusCode, 400, url)
    t.equal(body(res).field, 'q')
  }
  t.equal((await app.inject({ url: '/api/v1/users?q=abc', headers })).statusCode, 200)
})
