import t from 'tap'
import { body, build } from '../helpers/app.js'

const vendor = 'application/vnd.api.v1+json'
const user = { name: 'Grace', email: 'grace@example.com' }

t.test('/api/v1 is canonical; /api serves the latest version', async (t) => {
  const app = await build(t)
  const canonical = await app.inject({ method: 'POST', url: '/api/v1/users', payload: user })
  t.equal(canonical.statusCode, 201)
  const latest = await app.inject({ method: 'POST', url: '/api/users', payload: { ...user, email: 'g2@example.com' } })
  t.equal(latest.statusCode, 201)
  t.match(latest.headers['content-type'], /^application\/json/)
  t.same(Object.keys(body(latest)).sort(), Object.keys(body(canonical)).sort(), 'same representation')
})

t.test('a vendor Accept or ?version=1 selects v1; the answer names the vendor type', async (t) => {
  const app = await build(t)
  const byAccept = await app.inject({ method: 'POST', url: '/api/users', headers: { accept: vendor }, payload: user })
  t.equal(byAccept.statusCode, 201)
  t.equal(byAccept.headers['content-type'], vendor)
  const byQuery = await app.inject({ method: 'POST', url: '/api/users?version=1', payload: { ...user, email: 'q@example.com' } })
  t.equal(byQuery.statusCode, 201)
  const onCanonical = await app.inject({ method: 'POST', url: '/api/v1/users', headers: { accept: `${vendor}, application/json;q=0.5` }, payload: { ...user, email: 'c@example.com' } })
  t.equal(onCanonical.headers['content-type'], vendor)
  const error = await app.inject({ method: 'POST', url: '/api/users', headers: { accept: vendor }, payload: {} })
  t.equal(error.statusCode, 400)
  t.equal(error.headers['content-type'], vendor, 'errors too')
})

t.test('an unsupported version is 400 on version', async (t) => {
  const app = await build(t)
  const cases = [
    { url: '/api/users?version=2' },
    { url: '/api/users', headers: { accept: 'application/vnd.api.v2+json' } },
    { url: '/api/v1/users', headers: { accept: 'application/vnd.api.v9+json' } },
    { url: '/api/v1/users?version=0' },
    { url: '/api/users?version=zqxj' }
  ]
  for (const request of cases) {
    const res = await app.inject({ method: 'POST', payload: user, ...request })
    t.equal(res.statusCode, 400, JSON.stringify(request))
    t.equal(body(res).field, 'version')
    t.notMatch(res.body, /zqxj/, 'the version sent is not echoed')
  }
  const v2 = await app.inject({ url: '/api/v2/users' })
  t.equal(v2.statusCode, 400, 'a version in the path is checked too')
  t.equal(body(v2).field, 'version')
})

t.test('trailing slashes do not matter', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/api/v1/users/', payload: user })
  t.equal(res.statusCode, 201)
})
