import t from 'tap'
import { body, build } from './helper.js'

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
  const created = body(await app.inject({ method: 'POST', url: '/api/v1/users', payload: ada }))
  const url = `/api/v1/users/${created.id as number}`

  const got = await app.inject({ url })
  t.equal(got.statusCode, 200)
  t.same(body(got), created)

  const narrowed = await app.inject({ url: url + '?fields=name' })
  t.same(body(narrowed), { id: created.id, name: ada.name })

  const put = await app.inject({ method: 'PUT', url, payload: { name: 'Ada King', email: 'king@example.com' } })
  t.equal(put.statusCode, 200)
  t.same(body(put), { ...created, name: 'Ada King', email: 'king@example.com' })

  const putMissing = await app.inject({ method: 'PUT', url, payload: { name: 'Only name' } })
  t.equal(putMissing.statusCode, 400)
  t.equal(body(putMissing).field, 'email')

  const patch = await app.inject({ method: 'PATCH', url, payload: { name: 'Countess' } })
  t.equal(patch.statusCode, 200)
  t.equal(body(patch).name, 'Countess')
  t.equal(body(patch).email, 'king@example.com')

  const del = await app.inject({ method: 'DELETE', url })
  t.equal(del.statusCode, 204)
  t.equal(del.body, '')
  t.equal((await app.inject({ url })).statusCode, 404)
  t.equal((await app.inject({ method: 'DELETE', url })).statusCode, 404)
  t.equal(await app.db.selectFrom('profiles').select('user_id').where('user_id', '=', created.id as number).executeTakeFirst(), undefined, 'profile went with the user')
})

t.test('path ids that are not positive integers are 400 on id', async (t) => {
  const app = await build(t)
  for (const id of ['abc', '0', '-1', '1.5', '99999999999999999999']) {
    const res = await app.inject({ url: `/api/v1/users/${id}` })
    t.equal(res.statusCode, 400, id)
    t.equal(body(res).field, 'id', id)
  }
})
