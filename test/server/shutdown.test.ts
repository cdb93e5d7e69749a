// Closing while a request whose client has gone is still running its statements.
import { request } from 'node:http'
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import Fastify from 'fastify'
import pg from 'pg'
import t from 'tap'
import tandem from '../../app/tandem.js'
import { ADMIN, TEST_SECRET } from '../helpers/app.js'
import { wireDatabase } from '../helpers/database.js'

t.test('closing waits for the statements of requests whose clients left, then ends the pool', async (t) => {
  const url = await wireDatabase(t)
  const locker = new pg.Client({ connectionString: url })
  t.teardown(() => locker.end().catch(() => {}))

  const logged: Array<{ level: number, msg?: string, err?: { message?: string } }> = []
  const stream = new Writable({ write (chunk: Buffer, _encoding, done) { logged.push(JSON.parse(chunk.toString())); done() } })
  const app = Fastify({ logger: { level: 'info', stream } })
  await app.register(tandem, { databaseUrl: url, jwtSecret: TEST_SECRET, adminEmail: ADMIN.email, adminPassword: ADMIN.password, rootHandlers: true, databasePoolSize: 1 })
  await app.ready()
  const users = await app.db.insertInto('users').values([{ name: 'A', email: 'a@example.com' }, { name: 'B', email: 'b@example.com' }]).returning('id').execute()
  const posts = await app.db.insertInto('posts').values(users.map(({ id }) => ({ author_id: id, title: 't', content: 'c' }))).returning('id').execute()
  await app.db.insertInto('comments').values(posts.map(({ id }) => ({ post_id: id, author_id: users[0]?.id ?? 0, text: 'hi' }))).execute()
  const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: ADMIN })
  const token = login.json<{ accessToken: string }>().accessToken
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0

  // Reading posts now waits for this lock: the query stops after its first level.
  await locker.connect()
  await locker.query('begin')
  await locker.query('lock table posts in access exclusive mode')
  const body = JSON.stringify({ query: '{ users(limit: 5) { posts { comments { text } } } }' })
  const client = request({ host: '127.0.0.1', port, method: 'POST', path: '/graphql', headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` } })
  client.on('error', () => {})
  client.end(body)
  await sleep(300)
  client.destroy()

  const closing = app.close()
  await sleep(300)
  // The posts level goes on, then the comments level needs a connection of the closing pool.
  await locker.query('commit')
  const started = Date.now()
  await closing
  t.ok(Date.now() - started < 5_000, 'the close finished')
  const failures = logged.filter((line) => line.level >= 50 || /destroyed/.test(JSON.stringify(line)))
  t.same(failures, [], 'no statement met an ended pool, nothing was logged as an error')
})
