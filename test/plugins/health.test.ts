import Fastify from 'fastify'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import t from 'tap'
import type { Database } from '../../db/types.js'
import { serverOptions } from '../../plugins/server-options.js'
import tandem from '../../app/tandem.js'
import { body, build, TEST_SECRET } from '../helpers/app.js'

t.test('/health and /ready answer 200 while the database answers', async (t) => {
  const app = await build(t)
  const health = await app.inject({ url: '/health' })
  t.equal(health.statusCode, 200)
  t.same(body(health), { status: 'ok' })
  const ready = await app.inject({ url: '/ready' })
  t.equal(ready.statusCode, 200)
})

t.test('with the database unreachable, /ready and API calls are 503, fast', async (t) => {
  // A closed port stands in for a stopped server.
  const pool = new pg.Pool({ connectionString: 'postgres://postgres@127.0.0.1:1/nowhere', connectionTimeoutMillis: 1000 })
  pool.on('error', () => {})
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) })
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  await app.register(tandem, { db, jwtSecret: TEST_SECRET, rootHandlers: true })
  t.teardown(async () => { await app.close(); await db.destroy() })

  t.equal((await app.inject({ url: '/health' })).statusCode, 200, 'the process itself lives')
  const started = Date.now()
  const ready = await app.inject({ url: '/ready' })
  t.equal(ready.statusCode, 503)
  t.type(body(ready).error, 'string')
  const write = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'A', email: 'a@b.io' } })
  t.equal(write.statusCode, 503)
  t.same(body(write), { error: 'database unavailable' })
  t.ok(Date.now() - started < 5000, 'answers within the connection timeout')
})
