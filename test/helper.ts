import { randomBytes } from 'node:crypto'
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import pg from 'pg'
import tap from 'tap'
import { connect, type Db } from '../db/connect.js'
import { serverOptions } from '../plugins/server-options.js'
import tandem, { type TandemPluginOptions } from '../plugins/tandem.js'

/** What `build` needs of a test: somewhere to register the clean-up. */
interface Test { teardown: (fn: () => unknown) => void }

export const TEST_SECRET = 'test-secret-that-is-long-enough'

/** `DATABASE_URL` with its database name replaced. */
export function withDatabase (url: string, name: string): string {
  const parsed = new URL(url)
  parsed.pathname = '/' + name
  return parsed.toString()
}

let shared: Promise<Db> | undefined

/**
 * One database per test file: in-memory PGlite by default, or a fresh database on the
 * `DATABASE_URL` server (files run in parallel, so each gets its own and drops it at the end).
 */
export function testDb (): Promise<Db> {
  shared ??= (async () => {
    const serverUrl = process.env.DATABASE_URL
    if (serverUrl === undefined || serverUrl === '') return connect({})
    const name = `tandem_test_${randomBytes(6).toString('hex')}`
    const admin = new pg.Client({ connectionString: serverUrl })
    await admin.connect()
    await admin.query(`create database ${name}`)
    await admin.end()
    const db = await connect({ databaseUrl: withDatabase(serverUrl, name), poolSize: 10 })
    tap.teardown(async () => {
      await db.destroy()
      const cleanup = new pg.Client({ connectionString: serverUrl })
      await cleanup.connect()
      await cleanup.query(`drop database if exists ${name} with (force)`)
      await cleanup.end()
    })
    return db
  })()
  return shared
}

const tables = ['order_items', 'orders', 'comments', 'posts', 'profiles', 'products', 'users']

/** Empties every table and restarts the ids, so each test starts from the same place. */
export async function resetDb (db: Db): Promise<void> {
  await sql`truncate ${sql.join(tables.map((t) => sql.table(t)))} restart identity cascade`.execute(db)
}

/** A Tandem server over the file's test database, emptied first, closed when the test ends. */
export async function build (t: Test, options: TandemPluginOptions = {}): Promise<FastifyInstance> {
  const db = await testDb()
  await resetDb(db)
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  await app.register(tandem, { db, jwtSecret: TEST_SECRET, rootHandlers: true, ...options })
  await app.ready()
  t.teardown(() => app.close())
  return app
}

if (process.env.TZ !== 'UTC') process.env.TZ = 'UTC'

/** The parsed JSON body of an injected response. */
export function body<T = Record<string, unknown>> (response: LightMyRequestResponse): T {
  return JSON.parse(response.body) as T
}
