// Throw-away databases for tests: embedded (PGlite from a migrated snapshot), reached through the
// PostgreSQL wire protocol (PGlite behind pglite-socket), or fresh on the DATABASE_URL server.
import { randomBytes } from 'node:crypto'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGLiteSocketServer } from '@electric-sql/pglite-socket'
import { sql } from 'kysely'
import pg from 'pg'
import tap from 'tap'
import { connect, type ConnectOptions, type Db } from '../../db/connect.js'
import { embeddedEngine } from '../../db/embedded.js'
import { migratedSnapshot } from './snapshot.js'

/** What the helpers need of a test: somewhere to register the clean-up. */
export interface Test { teardown: (fn: () => unknown) => void }

/** The `DATABASE_URL` server the suite runs on, or undefined for the embedded database. */
export const serverUrl = (): string | undefined => {
  const url = process.env.DATABASE_URL
  return url === undefined || url === '' ? undefined : url
}

/** `url` with its database name replaced. */
export function withDatabase (url: string, name: string): string {
  const parsed = new URL(url)
  parsed.pathname = '/' + name
  return parsed.toString()
}

/**
 * A temporary directory holding a migrated embedded database (a copy of the snapshot's), for a
 * server process started with `DATA_DIR`; removed when the test ends.
 */
export async function migratedDataDir (t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-data-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await cp((await migratedSnapshot()).dataDir, dir, { recursive: true })
  return dir
}

async function adminStatement (url: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(statement)
  } finally {
    await client.end()
  }
}

/** A new empty database on the `DATABASE_URL` server, dropped when the test ends; its URL. */
export async function serverDatabase (t: Test, server: string, prefix = 'tandem_test'): Promise<string> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`
  await adminStatement(server, `create database ${name}`)
  t.teardown(() => adminStatement(server, `drop database if exists ${name} with (force)`))
  return withDatabase(server, name)
}

/**
 * A migrated database of its own, closed (and dropped) when the test ends: in-memory PGlite from the
 * snapshot, or a new database on the `DATABASE_URL` server (test files run in parallel there).
 */
export async function throwAwayDb (t: Test, options: Omit<ConnectOptions, 'databaseUrl' | 'dataDir' | 'embeddedSnapshot'> = {}): Promise<Db> {
  const server = serverUrl()
  const db = server === undefined
    ? await connect({ embeddedSnapshot: (await migratedSnapshot()).tarball })
    : await connect({ ...options, databaseUrl: await serverDatabase(t, server), poolSize: options.poolSize ?? 10 })
  // Registered after the database's drop: tap runs teardowns last first, so the pool closes before it.
  t.teardown(() => db.destroy())
  return db
}

/**
 * A `postgres://` URL of a migrated database of its own that the `pg` driver reaches over the wire:
 * a new database on the `DATABASE_URL` server, or else a PGlite from the snapshot served by
 * pglite-socket, so that the driver's path (pool, prepared statements, row parsing) runs with nothing
 * installed. PGlite is one session: every connection to it shares its prepared statements, so
 * open one Tandem pool of one connection per URL.
 */
export async function wireDatabase (t: Test): Promise<string> {
  const server = serverUrl()
  if (server !== undefined) {
    const url = await serverDatabase(t, server)
    const db = await connect({ databaseUrl: url, poolSize: 1 })
    await db.destroy()
    return url
  }
  const engine = await embeddedEngine(undefined, (await migratedSnapshot()).tarball)
  const socket = new PGLiteSocketServer({ db: engine, host: '127.0.0.1', port: 0, maxConnections: 8 })
  await socket.start()
  t.teardown(async () => {
    await socket.stop()
    await engine.close()
  })
  return `postgres://postgres@127.0.0.1:${socket.getServerConn().split(':')[1] ?? ''}/postgres`
}

let shared: Promise<Db> | undefined

/** One database per test file (see `throwAwayDb`), shared by its tests and closed when the file ends. */
export function testDb (): Promise<Db> {
  shared ??= throwAwayDb(tap)
  return shared
}

const tables = ['order_items', 'orders', 'comments', 'posts', 'profiles', 'products', 'users', 'user_tokens', 'email_outbox', 'revoked_tokens', 'persisted_queries', 'idempotency_keys', 'login_failures', 'login_failures_by_device']

/** Empties every table and restarts the ids, so each test starts from the same place. */
export async function resetDb (db: Db): Promise<void> {
  await sql`truncate ${sql.join(tables.map((t) => sql.table(t)))} restart identity cascade`.execute(db)
}
