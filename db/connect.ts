import { Kysely, PostgresDialect, type CompiledQuery, type PostgresPool, type PostgresPoolClient } from 'kysely'
import pg from 'pg'
import { settingName } from '../plugins/config.js'
import { requirePackages } from '../plugins/optional-packages.js'
import { checkKysely, checkPg } from './internals/index.js'
import { migrate, type MigrateOptions } from './migrate.js'
import { PreparingPool } from './prepared.js'
import { parseDate, parseTimestamp, parseTimestamptz } from './timestamps.js'
import type { TandemDatabase } from './types.js'

export interface ConnectOptions {
  /** `postgres://…`; when absent the embedded PGlite database is used. */
  databaseUrl?: string | undefined
  /** PGlite data directory, or `memory://`. Default: in memory. */
  dataDir?: string | undefined
  /** Largest number of pooled connections to a real server. */
  poolSize?: number | undefined
  /**
   * A real server cancels any statement that runs (or waits on a lock) longer than this, so that a
   * stuck query cannot hold a pooled connection for ever; the request gets a 503. Default: no limit.
   */
  statementTimeoutMillis?: number | undefined
  /**
   * Prepare each distinct statement once per pooled connection, so that a real server parses and
   * plans it once. Default: true. Turn it off behind a pooler that cannot keep prepared statements
   * (PgBouncer in transaction mode before 1.21).
   */
  preparedStatements?: boolean | undefined
  /**
   * A dump of a migrated embedded database (`snapshotEmbedded` in db/embedded.ts) to start an in-memory one from:
   * loading a data directory skips PGlite's initdb, which is most of its start-up.
   */
  embeddedSnapshot?: Blob | undefined
  /**
   * How long the migrations at start wait for any one lock (another instance migrating the same
   * database, a table a migration changes) before the start fails, in milliseconds. Default: 60000.
   */
  migrationLockTimeout?: number | undefined
}

/** The database handle: Tandem's tables and the host's (`HostTables`), in `app.db` and in every hook's `trx`. */
export type Db = Kysely<TandemDatabase>

// The one place driver differences are normalized: `pg` hands out int8 and numeric as strings,
// PGlite as numbers or strings. Ids fit in 2^53 and prices have two decimals, so both become
// JS numbers everywhere, but an int8 beyond 2^53 (a host's bigint key) stays its exact text, which
// a bigint key's resource shows as text whatever its size (`shownKey` in schema/keys.ts); timestamps are Dates from both drivers, a `timestamp` read as UTC, and a
// `date` stays its text (the same calendar day in every time zone).
export const INT8 = 20
export const NUMERIC = 1700
export const DATE = 1082
export const TIMESTAMP = 1114
const TIMESTAMPTZ = 1184
export const toNumber = (value: string): number => Number(value)
/** An int8's text as a number when it is one exactly, else the text: no digit of a large key is lost. */
export const toSafeNumber = (value: string): number | string => {
  const number = Number(value)
  return Number.isSafeInteger(number) ? number : value
}

function typeParser (oid: number, format?: 'text' | 'binary'): unknown {
  if (oid === INT8) return toSafeNumber
  if (oid === NUMERIC) return toNumber
  if (format === 'binary') return pg.types.getTypeParser(oid, format)
  if (oid === TIMESTAMPTZ) return parseTimestamptz
  if (oid === TIMESTAMP) return parseTimestamp
  if (oid === DATE) return parseDate
  return pg.types.getTypeParser(oid, format)
}

/** A server's pool, and how its clients run statements (prepared or not). */
interface ServerPool {
  pool: pg.Pool
  /** Set when statements are prepared: the pool as Kysely has it, which also runs `readRows`. */
  preparing: PreparingPool | undefined
  /** Set on a replica's: what fails for the replica's fault runs again on the primary. */
  replica?: ReplicaLink | undefined
}

/**
 * What a replica's handle knows of its replica and its primary (db/replicas.ts keeps the state): a
 * statement that fails for a fault of the replica (`isReplicaFault`) runs again on `primary`.
 */
export interface ReplicaLink {
  readonly primary: Db
  /** False while the replica is known to be down: its statements go to the primary at once. */
  usable: () => boolean
  /** The replica failed a statement or a connection: left alone for a while. */
  failed: (error: unknown) => void
}

function serverPool (databaseUrl: string, options: ConnectOptions, connectionTimeoutMillis: number): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: options.poolSize ?? 20,
    ...(options.statementTimeoutMillis === undefined ? {} : { statement_timeout: options.statementTimeoutMillis }),
    connectionTimeoutMillis,
    idleTimeoutMillis: 30_000,
    types: { getTypeParser: typeParser as typeof pg.types.getTypeParser }
  })
  // A client that loses its server emits 'error'; without a listener that crashes the process.
  // The pool listens on idle clients only, so every client gets a listener of its own too: a
  // checked-out one (inside a transaction, say) fails its queries, and the pool drops it on release.
  pool.on('error', () => {})
  pool.on('connect', (client) => { client.on('error', () => {}) })
  return pool
}

function realServer (databaseUrl: string, options: ConnectOptions): Db {
  const pool = serverPool(databaseUrl, options, 5_000)
  const preparing = options.preparedStatements === false ? undefined : new PreparingPool(pool)
  const db = new Kysely<TandemDatabase>({ dialect: new PostgresDialect({ pool: preparing ?? pool }) })
  pools.set(db, { pool, preparing })
  return db
}

// Codes of a replica that cannot answer now, where the primary can: it is shutting down or
// starting (57P01-3), full (53300), or cancelled the read for a conflict with its recovery (40001).
const replicaFaultCodes = new Set(['57P01', '57P02', '57P03', '53300', '40001'])

/**
 * Whether a replica's `error` is the replica's fault, so that the read can run on the primary: no
 * connection (a system error, a connect timeout, a lost connection: pg's errors without a SQLSTATE),
 * a connection exception (class 08), or one of `replicaFaultCodes`. An error of the statement itself
 * (a bad value, a statement timeout) would be the primary's too, and is not.
 */
export function isReplicaFault (error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true
  return code.startsWith('08') || replicaFaultCodes.has(code)
}

/**
 * A streaming replica of `link.primary`, opened as the primary is (pool size, statement timeout,
 * prepared statements) with a connect timeout of its own; it is read only (never a transaction).
 * A statement it cannot run for its own fault runs on the primary in the same call, and none is
 * sent to it while `link.usable()` is false. Nothing is sent before the first read.
 */
export function replicaServer (databaseUrl: string, options: ConnectOptions & { connectTimeoutMillis: number }, link: ReplicaLink): Db {
  const primary = pools.get(link.primary)
  if (primary === undefined) throw new Error('read replicas need a PostgreSQL server as the primary')
  const pool = serverPool(databaseUrl, options, options.connectTimeoutMillis)
  const preparing = options.preparedStatements === false ? undefined : new PreparingPool(pool)
  // The same pg as the primary's: its start check holds for this pool too.
  if (preparing !== undefined) preparing.shapedRows = primary.preparing?.shapedRows ?? false
  const db = new Kysely<TandemDatabase>({ dialect: new PostgresDialect({ pool: new FallbackPool(preparing ?? pool, primary.preparing ?? primary.pool, link) }) })
  pools.set(db, { pool, preparing, replica: link })
  return db
}

/** A replica's pool as Kysely takes one: a connection or a statement that fails for the replica's fault is the primary's. */
class FallbackPool implements PostgresPool {
  readonly #clients = new WeakMap<PostgresPoolClient, PostgresPoolClient>()
  constructor (readonly replica: PostgresPool, readonly primary: PostgresPool, readonly link: ReplicaLink) {}

  async connect (): Promise<PostgresPoolClient> {
    if (!this.link.usable()) return await this.primary.connect()
    let client: PostgresPoolClient
    try {
      client = await this.replica.connect()
    } catch (error) {
      if (!isReplicaFault(error)) throw error
      this.link.failed(error)
      return await this.primary.connect()
    }
    let wrapped = this.#clients.get(client)
    if (wrapped === undefined) {
      const inner = client
      const query = async (text: string, values?: readonly unknown[]): Promise<unknown> => {
        try {
          return await (inner.query as (text: string, values?: readonly unknown[]) => Promise<unknown>)(text, values)
        } catch (error) {
          if (!isReplicaFault(error)) throw error
          this.link.failed(error)
          const other = await this.primary.connect()
          try {
            return await (other.query as (text: string, values?: readonly unknown[]) => Promise<unknown>)(text, values)
          } finally {
            other.release()
          }
        }
      }
      wrapped = { query, release: () => { inner.release() } } as unknown as PostgresPoolClient
      this.#clients.set(client, wrapped)
    }
    return wrapped
  }

  async end (): Promise<void> {
    await this.replica.end()
  }
}

const pools = new WeakMap<Db, ServerPool>()

/** What a `pg` pool tells of its connections (its own counters, read as they are). */
export interface PoolCounts {
  readonly totalCount: number
  readonly idleCount: number
  readonly waitingCount: number
  readonly options: { readonly max?: number | undefined }
}

/** The counters of the pool behind `db` when it is a real server's; undefined for the embedded database. */
export const poolCounts = (db: Db): PoolCounts | undefined => pools.get(db)?.pool

/**
 * The rows of a compiled read. On a server's own pool it runs on a pooled client directly: Kysely's
 * executor passes every statement through about ten promises (connection provider, drivers, result
 * transform), a cost every served list page paid (see PERFORMANCE-DECISIONS.md, 'Compiled reads on
 * the pool, one promise per read'). Any other handle (the embedded database, a transaction, a Kysely
 * with plugins) runs it through Kysely.
 */
export function readRows<R> (db: Db, compiled: CompiledQuery<R>): Promise<R[]> {
  const server = pools.get(db)
  if (server === undefined) return db.executeQuery(compiled).then((result) => result.rows)
  if (server.replica !== undefined) return replicaRows(server, server.replica, compiled)
  return poolRows(server, compiled)
}

/** `readRows` on a replica: on the primary while it is down, and again there when it fails for its fault. */
function replicaRows<R> (server: ServerPool, link: ReplicaLink, compiled: CompiledQuery<R>): Promise<R[]> {
  if (!link.usable()) return readRows(link.primary, compiled)
  return poolRows(server, compiled).catch((error: unknown) => {
    if (!isReplicaFault(error)) throw error
    link.failed(error)
    return readRows(link.primary, compiled)
  })
}

/** The rows of a compiled read on `db`'s own pool, a replica's too (no fallback): how a replica is polled. */
export function ownRows<R> (db: Db, compiled: CompiledQuery<R>): Promise<R[]> {
  const server = pools.get(db)
  return server === undefined ? readRows(db, compiled) : poolRows(server, compiled)
}

function poolRows<R> (server: ServerPool, compiled: CompiledQuery<R>): Promise<R[]> {
  const { pool, preparing } = server
  // Callbacks, not promises, between the pool and the statement: one promise per read instead of three.
  return new Promise((resolve, reject) => {
    pool.connect((connectError, client, release) => {
      if (client === undefined) {
        reject(connectError ?? new Error('the pool handed out no connection'))
        return
      }
      const done = (error: Error | undefined, result: pg.QueryResult): void => {
        release()
        if (error === undefined || error === null) resolve(result.rows as R[])
        else reject(error)
      }
      if (preparing === undefined) client.query(compiled.sql, compiled.parameters as unknown[], done)
      else preparing.run(client, compiled.sql, compiled.parameters as unknown[], done)
    })
  })
}

/**
 * Resolves once no statement has run for `quietMillis` (or after `timeoutMillis` at most). A server
 * that closes stops waiting for a request whose client has gone, but its handler still runs: this
 * lets such handlers finish their remaining statements before the pool ends under them. The
 * embedded database has no pool to watch and resolves at once.
 */
export async function settle (db: Db, { quietMillis = 50, timeoutMillis = 5_000 } = {}): Promise<void> {
  const pool = pools.get(db)?.pool
  if (pool === undefined) return
  const deadline = Date.now() + timeoutMillis
  let quietSince = Date.now()
  while (Date.now() < deadline) {
    if (pool.waitingCount > 0 || pool.totalCount > pool.idleCount) quietSince = Date.now()
    else if (Date.now() - quietSince >= quietMillis) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

/** Opens the database and brings its schema up to date. Safe to call from several processes at once. */
export async function connect (options: ConnectOptions = {}): Promise<Db> {
  const db = options.databaseUrl !== undefined
    ? realServer(options.databaseUrl, options)
    // Loaded only when used: a server on a real PostgreSQL would otherwise carry the embedded
    // database's code in memory (see PERFORMANCE-DECISIONS.md, 'Optional dependencies loaded only
    // when used'), and a host that always gives one need not install PGlite (an optional peer).
    : await embedded(options)
  try {
    await checkInternals(db)
    await migrate(db, migrateOptions(options))
  } catch (error) {
    await db.destroy().catch(() => {})
    throw error
  }
  return db
}

/** The embedded database, or one line naming its packages when the host has not installed them. */
async function embedded (options: ConnectOptions): Promise<Db> {
  const setting = settingName(options, 'databaseUrl')
  requirePackages('embeddedDatabase', `the embedded database (used when ${setting} is not set)`, `set ${setting} to a PostgreSQL server's URL`)
  return (await import('./embedded.js')).embedded(options.dataDir, options.embeddedSnapshot)
}

/**
 * Checks that the installed pg and Kysely still behave as db/internals assumes, before any
 * statement relies on it; what fails the check takes the library's public path, with a warning.
 */
async function checkInternals (db: Db): Promise<void> {
  checkKysely(db)
  const preparing = pools.get(db)?.preparing
  if (preparing !== undefined) preparing.shapedRows = await checkPg(preparing.pool)
}

/** The migrations' settings of `options`, named as the operator set them for messages. */
export const migrateOptions = (options: ConnectOptions): MigrateOptions => ({
  lockTimeoutMillis: options.migrationLockTimeout,
  lockTimeoutSetting: settingName(options, 'migrationLockTimeout')
})
