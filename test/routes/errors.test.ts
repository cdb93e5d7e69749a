import t from 'tap'
import { body, build } from '../helpers/app.js'

const json = { 'content-type': 'application/json' }

t.test('unknown routes are 404 JSON, anywhere, with a trailing slash or not', async (t) => {
  const app = await build(t)
  for (const url of ['/api/v1/nope', '/api/v1/nope/', '/nope', '/api/v1/users/1/nope', '/api/nope']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 404, url)
    t.match(res.headers['content-type'], /^application\/json/, url)
    t.type(body(res).error, 'string', url)
  }
})

t.test('bad JSON is 400, other content types 415, bodies over 1 MiB 413', async (t) => {
  const app = await build(t)
  const badJson = await app.inject({ method: 'POST', url: '/api/v1/users', headers: json, payload: '{"name": ' })
  t.equal(badJson.statusCode, 400)
  t.same(body(badJson), { error: 'request body is not valid JSON' })

  for (const type of ['text/plain', 'application/xml', 'application/x-www-form-urlencoded']) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { 'content-type': type }, payload: 'name=x' })
    t.equal(res.statusCode, 415, type)
    t.type(body(res).error, 'string')
  }

  const huge = JSON.stringify({ name: 'x'.repeat(1024 * 1024), email: 'a@b.io' })
  const tooLarge = await app.inject({ method: 'POST', url: '/api/v1/users', headers: json, payload: huge })
  t.equal(tooLarge.statusCode, 413)
  t.same(body(tooLarge), { error: 'request body is larger than 1 MiB' })

  const notObject = await app.inject({ method: 'POST', url: '/api/v1/users', headers: json, payload: '[1,2]' })
  t.equal(notObject.statusCode, 400)
})

t.test('strings are not coerced in JSON bodies, unknown properties are refused', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'A', email: 'a@b.io', admin: true } })
  t.equal(res.statusCode, 400)
  t.same(body(res), { error: 'admin is not a known property', field: 'admin' })
  const none = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'A', email: 'a@b.io' } })
  t.equal(none.statusCode, 201)
  t.notOk(await app.db.selectFrom('users').select('role').where('role', '=', 'admin').executeTakeFirst())
})

t.test('a database constraint becomes 409 naming the field, never a 500 with database text', async (t) => {
  const app = await build(t)
  await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'A', email: 'same@b.io' } })
  const results = await Promise.all(Array.from({ length: 5 }, () =>
    app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'B', email: 'SAME@b.io' } })))
  for (const res of results) {
    t.equal(res.statusCode, 409)
    t.same(body(res), { error: 'email already exists', field: 'email' })
    t.notMatch(res.body, /duplicate key|constraint|users_email_key/)
  }
  const count = await app.db.selectFrom('users').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()
  t.equal(Number(count.n), 1)
})

t.test('an unexpected fault is a 500 without internals', async (t) => {
  const app = await build(t)
  await app.db.schema.alterTable('profiles').renameTo('profiles_gone').execute()
  t.teardown(() => app.db.schema.alterTable('profiles_gone').renameTo('profiles').execute())
  const res = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'A', email: 'a@b.io' } })
  t.equal(res.statusCode, 500)
  t.same(body(res), { error: 'internal server error' })
  t.notOk(await app.db.selectFrom('users').select('id').executeTakeFirst(), 'the half-written user was rolled back')
})
