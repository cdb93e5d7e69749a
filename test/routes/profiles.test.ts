import t from 'tap'
import { adminToken, apiClient, body, build, signedIn } from '../helpers/app.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]
type Profile = { user_id: number, bio: string | null, avatar_url: string | null, location: string | null, updated_at: string }

async function setup (t: Test) {
  const app = await build(t)
  const alice = await signedIn(app, { name: 'Alice' })
  const bob = await signedIn(app, { name: 'Bob' })
  return {
    app,
    alice: { ...alice, call: apiClient(app, alice.headers), url: `/users/${alice.id}/profile` },
    bob: { ...bob, call: apiClient(app, bob.headers) },
    admin: apiClient(app, await adminToken(app)),
    anonymous: apiClient(app),
    forged: apiClient(app, { authorization: 'Bearer not.a.token' })
  }
}

const full = { bio: 'Writes about engines', avatar_url: 'https://example.com/ada.png', location: 'London' }

t.test('GET /users/{id}/profile: the empty profile of a new user; fields, ETag and 304; 401, 404, 400', async (t) => {
  const { alice, bob, anonymous, forged } = await setup(t)
  const res = await bob.call('GET', alice.url)
  t.equal(res.statusCode, 200)
  const profile = body<Profile>(res)
  t.same(Object.keys(profile), ['user_id', 'bio', 'avatar_url', 'location', 'updated_at'])
  t.match(profile, { user_id: alice.id, bio: null, avatar_url: null, location: null })
  t.match(profile.updated_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

  const etag = res.headers.etag as string
  t.match(etag, /^"[\w-]+"$/)
  const again = await bob.call('GET', alice.url, undefined, { 'if-none-match': etag })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')

  t.same(body(await bob.call('GET', `${alice.url}?fields=bio`)), { user_id: alice.id, bio: null }, 'user_id always comes')
  for (const [query, field] of [['fields=password', 'fields'], ['include=user', 'include'], ['sort=id', 'sort']] as const) {
    const bad = await bob.call('GET', `${alice.url}?${query}`)
    t.equal(bad.statusCode, 400, query)
    t.equal(body(bad).field, field, query)
  }
  const missing = await bob.call('GET', '/users/999/profile')
  t.equal(missing.statusCode, 404)
  t.same(body(missing), { error: 'user not found' })
  t.equal(body(await bob.call('GET', '/users/0/profile')).field, 'id')
  t.equal((await anonymous('GET', alice.url)).statusCode, 401)
  t.equal((await forged('GET', alice.url)).statusCode, 401)
})

t.test('PUT replaces: fields left out become null; updated_at moves; the answer\'s ETag is current', async (t) => {
  const { app, alice } = await setup(t)
  const before = body<Profile>(await alice.call('GET', alice.url))
  await new Promise((resolve) => setTimeout(resolve, 5))

  const put = await alice.call('PUT', alice.url, full)
  t.equal(put.statusCode, 200)
  const profile = body<Profile>(put)
  t.match(profile, { user_id: alice.id, ...full })
  t.ok(profile.updated_at > before.updated_at, 'updated_at is set on write')
  t.equal(put.headers.etag, (await alice.call('GET', alice.url)).headers.etag)

  const partial = body<Profile>(await alice.call('PUT', alice.url, { location: 'Paris' }))
  t.match(partial, { bio: null, avatar_url: null, location: 'Paris' })
  const row = await app.db.selectFrom('profiles').selectAll().where('user_id', '=', alice.id).executeTakeFirstOrThrow()
  t.match(row, { bio: null, avatar_url: null, location: 'Paris' })

  t.match(body(await alice.call('PUT', alice.url, {})), { bio: null, avatar_url: null, location: null }, 'an empty PUT clears everything')
})

t.test('PATCH changes only what is sent; null clears one field', async (t) => {
  const { app, alice } = await setup(t)
  await alice.call('PUT', alice.url, full)
  const patch = await alice.call('PATCH', alice.url, { location: 'Paris', avatar_url: null })
  t.equal(patch.statusCode, 200)
  t.match(body(patch), { bio: full.bio, avatar_url: null, location: 'Paris' })
  t.equal(patch.headers.etag, (await alice.call('GET', alice.url)).headers.etag)
  const row = await app.db.selectFrom('profiles').selectAll().where('user_id', '=', alice.id).executeTakeFirstOrThrow()
  t.match(row, { bio: full.bio, avatar_url: null, location: 'Paris' })
  t.match(body(await alice.call('PATCH', alice.url, {})), { bio: full.bio, location: 'Paris' }, 'an empty PATCH changes nothing')
})

t.test('writes: self or admin; 403 for others, 401 without a token, 404 for an unknown user', async (t) => {
  const { alice, bob, admin, anonymous, forged } = await setup(t)
  for (const method of ['PUT', 'PATCH'] as const) {
    const denied = await bob.call(method, alice.url, { bio: 'hacked' })
    t.equal(denied.statusCode, 403, `${method} by another user`)
    t.type(body(denied).error, 'string')
    t.equal((await bob.call(method, '/users/999/profile', { bio: 'x' })).statusCode, 403, `${method} of another (unknown) user`)
    t.equal((await anonymous(method, alice.url, { bio: 'x' })).statusCode, 401)
    t.equal((await forged(method, alice.url, { bio: 'x' })).statusCode, 401)
    t.equal((await admin(method, '/users/999/profile', { bio: 'x' })).statusCode, 404, `${method} of an unknown user by an admin`)
    const byAdmin = await admin(method, alice.url, { bio: `moderated by ${method}` })
    t.equal(byAdmin.statusCode, 200)
    t.equal(body(byAdmin).bio, `moderated by ${method}`)
  }
  t.equal(body(await alice.call('GET', alice.url)).bio, 'moderated by PATCH')
})

t.test('validation names the field: avatar_url an http(s) URI up to 2048, unknown properties', async (t) => {
  const { alice } = await setup(t)
  const cases: Array<[object, string]> = [
    [{ avatar_url: 'not a url' }, 'avatar_url'],
    [{ avatar_url: 'ftp://example.com/a.png' }, 'avatar_url'],
    [{ avatar_url: 'javascript:alert(1)' }, 'avatar_url'],
    [{ avatar_url: 'https://example.com/' + 'a'.repeat(2048) }, 'avatar_url'],
    [{ avatar_url: 42 }, 'avatar_url'],
    [{ bio: 'x'.repeat(5001) }, 'bio'],
    [{ location: 'x'.repeat(201) }, 'location'],
    [{ bio: 'x', website: 'https://example.com' }, 'website'],
    [{ user_id: 2 }, 'user_id']
  ]
  for (const [payload, field] of cases) {
    for (const method of ['PUT', 'PATCH'] as const) {
      const res = await alice.call(method, alice.url, payload)
      t.equal(res.statusCode, 400, `${method} ${JSON.stringify(payload).slice(0, 50)}`)
      t.equal(body(res).field, field)
    }
  }
  const long = 'https://example.com/' + 'a'.repeat(2048 - 20)
  t.equal((await alice.call('PATCH', alice.url, { avatar_url: long })).statusCode, 200, '2048 characters are fine')
  t.equal((await alice.call('PATCH', alice.url, { avatar_url: 'HTTP://EXAMPLE.COM/A.PNG' })).statusCode, 200)
})

t.test('If-Match on profile writes: stale is 412 and changes nothing', async (t) => {
  const { app, alice } = await setup(t)
  const etag = (await alice.call('GET', alice.url)).headers.etag as string
  const first = await alice.call('PATCH', alice.url, { bio: 'first' }, { 'if-match': etag })
  t.equal(first.statusCode, 200)
  for (const method of ['PUT', 'PATCH'] as const) {
    const stale = await alice.call(method, alice.url, { bio: 'lost' }, { 'if-match': etag })
    t.equal(stale.statusCode, 412, method)
    t.type(body(stale).error, 'string')
  }
  const row = await app.db.selectFrom('profiles').select('bio').where('user_id', '=', alice.id).executeTakeFirstOrThrow()
  t.equal(row.bio, 'first')
  t.equal((await alice.call('PUT', alice.url, { bio: 'second' }, { 'if-match': first.headers.etag as string })).statusCode, 200)
})
