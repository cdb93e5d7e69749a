// Each resource's routes as a plugin a host mounts under a prefix of its own (app/resource-routes.ts).
import Fastify from 'fastify'
import t from 'tap'
import { auth, database, declaredResourceRoutes, graphql, productsRoutes, profilesRoutes, usersRoutes } from '../../index.js'
import { authHeaders, body, resetDb, TEST_SECRET, testDb } from '../helpers/app.js'
import '../helpers/source-package.js'

const { labels, migrations } = await import('../../examples/labels.js')

t.test('productsRoutes, the products\' declared routes, serve a host under any prefix', async (t) => {
  const db = await testDb()
  await resetDb(db)
  const app = Fastify()
  t.teardown(() => app.close())
  app.get('/hello', async () => ({ hello: 'world' }))
  await app.register(database, { db })
  await app.register(auth, { jwtSecret: TEST_SECRET })
  await app.register(productsRoutes, { prefix: '/shop', rateLimit: false })
  await app.ready()

  const admin = await authHeaders(app, { id: 1, role: 'admin' })
  const created = await app.inject({ method: 'POST', url: '/shop/products', headers: admin, payload: { name: 'Pen', category: 'office', price: 2.5 } })
  t.equal(created.statusCode, 201)
  const pen = body<{ id: number }>(created)
  t.match(pen, { name: 'Pen', description: null, stock: 0, price: 2.5 })
  t.equal(created.headers.location, `/shop/products/${pen.id}`, 'the location is under the host\'s prefix')

  t.same(body(await app.inject(`/shop/products/${pen.id}?fields=price`)), { id: pen.id, price: 2.5 }, 'anyone reads')
  t.match(body(await app.inject('/shop/products?price_max=2&in_stock=false')), { data: [] })
  t.match(body(await app.inject('/shop/products?price_min=2.5&in_stock=false')), { data: [{ id: pen.id }] })
  const refused = await app.inject({ method: 'PATCH', url: `/shop/products/${pen.id}`, payload: { price: 1.005 }, headers: admin })
  t.same([refused.statusCode, body(refused).field], [400, 'price'], 'the declaration\'s rules hold under any prefix')
  t.equal((await app.inject({ method: 'DELETE', url: `/shop/products/${pen.id}` })).statusCode, 401)
  t.equal((await app.inject('/api/v1/products')).statusCode, 404, 'nothing is mounted where the host did not ask')
  t.same(body(await app.inject('/hello')), { hello: 'world' }, 'the host\'s routes are its own')
})

t.test('a host\'s declared resource à la carte: its REST routes under any prefix, and GraphQL, without tandem', async (t) => {
  const db = await testDb()
  await resetDb(db)
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(database, { db, migrations })
  await app.register(auth, { jwtSecret: TEST_SECRET })
  await app.register(declaredResourceRoutes(labels), { prefix: '/mine', rateLimit: false })
  await app.register(graphql, { resources: [labels] })
  await app.ready()

  const { id } = await db.insertInto('users').values({ name: 'Ann', email: 'ann@example.com' }).returning('id').executeTakeFirstOrThrow()
  const ann = await authHeaders(app, { id, role: 'user' })
  const created = await app.inject({ method: 'POST', url: '/mine/labels', headers: ann, payload: { name: 'urgent' } })
  t.equal(created.statusCode, 201)
  t.equal(created.headers.location, `/mine/labels/${body<{ id: number }>(created).id}`, 'under the host\'s prefix')
  t.match(body(await app.inject({ url: '/mine/labels', headers: ann })), { data: [{ name: 'urgent', owner_id: id }] })
  t.equal((await app.inject({ url: '/mine/labels' })).statusCode, 401, 'its rules hold')
  const answer = await app.inject({ method: 'POST', url: '/graphql', headers: ann, payload: { query: '{ labels(limit: 5) { name } }' } })
  t.same(body(answer), { data: { labels: [{ name: 'urgent' }] } }, 'GraphQL serves it without tandem')
})

t.test('profilesRoutes and usersRoutes mounted alone: the profile under its user, and include=profile', async (t) => {
  const db = await testDb()
  await resetDb(db)
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(database, { db })
  await app.register(auth, { jwtSecret: TEST_SECRET })
  await app.register(usersRoutes, { prefix: '/people', rateLimit: false })
  await app.register(profilesRoutes, { prefix: '/people', rateLimit: false })
  await app.ready()

  const signUp = await app.inject({ method: 'POST', url: '/people/users', payload: { name: 'Ann', email: 'ann@example.com' } })
  const { id } = body<{ id: number }>(signUp)
  const ann = await authHeaders(app, { id, role: 'user' })
  const patched = await app.inject({ method: 'PATCH', url: `/people/users/${id}/profile`, headers: ann, payload: { location: 'London' } })
  t.match([patched.statusCode, body(patched)], [200, { user_id: id, location: 'London' }])
  t.match(body(await app.inject({ url: `/people/users/${id}?include=profile`, headers: ann })), { id, profile: { user_id: id, location: 'London' } })
  t.same(body(await app.inject({ url: '/people/users/999/profile', headers: ann })), { error: 'user not found' })
})
