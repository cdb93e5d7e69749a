import type { FastifyInstance, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Migration } from 'kysely'
import { connect, migrateOptions, poolCounts, settle, type ConnectOptions, type Db } from '../db/connect.js'
import { migrateHost } from '../db/migrate.js'
import { afterWrite, openReplicas } from '../db/replicas.js'
import { ConfigError, settingName, withSettingNames } from './config.js'
import type { TandemConfig } from '../schema/options.js'

export interface DatabaseOptions {
  /** A real PostgreSQL server; without it an embedded PGlite database is used. @example 'postgres://app@127.0.0.1:5432/app' */
  databaseUrl?: string
  /** Where the embedded database is stored; `memory://` (the default) keeps it in memory. @example './.data' */
  dataDir?: string
  /** Connections in the pool to a real server. @example 20 */
  poolSize?: number
  /** A real server cancels statements running longer than this (the request gets a 503). Default: no limit. @example 5000 */
  statementTimeoutMillis?: number
  /** Prepare each distinct statement once per connection (default); false behind PgBouncer in transaction mode before 1.21. @example false */
  preparedStatements?: boolean
  /**
   * Streaming replicas of the primary (`databaseUrl`, or `db`'s server) that reads not part of a
   * write go to (CONTRACT §13). @example ['postgres://app@replica-1/app']
   */
  readUrls?: readonly string[] | undefined
  /** How far behind a replica may be and serve callers who have not written lately, in milliseconds. Default: 5000. @example 2000 */
  readMaxLagMillis?: number | undefined
  /** How long a read waits for a new connection to a replica before it goes to the primary, in milliseconds. Default: 1000. @example 500 */
  readConnectTimeoutMillis?: number | undefined
  /**
   * How long the migrations at start (Tandem's, then `migrations`) wait for any one lock — another
   * instance migrating the same database, a table a migration changes — before the start fails, in
   * milliseconds. Default: 60000. @example 300000
   */
  migrationLockTimeout?: number | undefined
  /** Where each caller's last write is kept for read-your-writes across instances; else in this process. @example 'redis://127.0.0.1:6379' */
  redisUrl?: string | undefined
  /**
   * Use this already connected (and migrated) Kysely instance instead of opening one; the host
   * then closes it.
   * @example await connect({ databaseUrl })
   */
  db?: Db
  /**
   * The host application's own Kysely migrations, applied at start in name order and recorded in
   * a table of their own (`host_migrations`), apart from Tandem's.
   * @example { '0001_labels': { up: async (db) => { await db.schema.createTable('labels')…execute() } } }
   */
  migrations?: Readonly<Record<string, Migration>>
}

/** The database settings of Tandem's configuration, as `connect` takes them. */
export function connectOptions (config: TandemConfig): ConnectOptions {
  // Named as the operator set them: a missing package of the embedded database names DATABASE_URL.
  return withSettingNames(config, {
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    preparedStatements: config.databasePreparedStatements,
    poolSize: config.databasePoolSize,
    statementTimeoutMillis: config.databaseStatementTimeout === 0 ? undefined : config.databaseStatementTimeout,
    readUrls: config.databaseReadUrls?.split(',').map((url) => url.trim()),
    readMaxLagMillis: durationMillis(config.databaseReadMaxLag),
    readConnectTimeoutMillis: config.databaseReadConnectTimeout,
    migrationLockTimeout: config.migrationLockTimeout,
    redisUrl: config.redisUrl
  })
}

const units: Record<string, number> = { ms: 1, s: 1000, m: 60_000 }

/** `500ms` → 500, `5s` → 5000; a bare number is seconds (the options schema has checked the format). */
export function durationMillis (text: string): number {
  const [, value = '0', unit = 's'] = /^(\d+)\s*(ms|s|m)?$/.exec(text.trim()) ?? []
  return Number(value) * (units[unit] ?? 1000)
}

/** The requests that wrote on a route that otherwise reads (a GraphQL mutation over `POST /graphql`). */
const wroteOnReadRoute = new WeakSet<FastifyRequest>()
const readRoutes = new Set(['/graphql'])

/** Tells the database plugin that `request`, on a route that otherwise only reads, wrote (a GraphQL mutation). */
export function requestWrote (request: FastifyRequest): void {
  wroteOnReadRoute.add(request)
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The Kysely instance every Tandem route and resolver queries through. */
    db: Db
  }
}

async function database (app: FastifyInstance, options: DatabaseOptions): Promise<void> {
  const readUrls = options.readUrls ?? []
  // Before the database opens: replicas of the embedded database cannot be.
  if (readUrls.length > 0 && options.db === undefined && options.databaseUrl === undefined && !app.hasDecorator('db')) throw replicasNeedServer(options)
  if (!app.hasDecorator('db')) {
    const db = options.db ?? await connect(options)
    app.decorate('db', db)
    // A real server's statements get their spans from @opentelemetry/instrumentation-pg (plugins/tracing-sdk.ts).
    if (app.hasDecorator('tandemTracer')) {
      const untrace = await (await import('../db/tracing.js')).traceEmbeddedStatements(db, app.tandemTracer)
      app.addHook('onClose', async () => { untrace() })
    }
    if (options.db === undefined) {
      app.addHook('onClose', async () => {
        await settle(db)
        await db.destroy()
      })
    }
  }
  if (options.migrations !== undefined) await migrateHost(app.db, options.migrations, migrateOptions(options))
  if (readUrls.length > 0) await replicas(app, options)
}

const replicasNeedServer = (options: DatabaseOptions): ConfigError =>
  new ConfigError(`invalid configuration: ${settingName(options, 'databaseReadUrls')} needs a PostgreSQL server as the primary (${settingName(options, 'databaseUrl')})`)

/**
 * Opens the replicas beside `app.db` (`db/replicas.ts` routes the reads), and keeps the primary's
 * WAL position after each write of a signed-in caller, before the answer leaves: their next read, on
 * any instance, goes to a replica only once it has replayed that write.
 */
async function replicas (app: FastifyInstance, options: DatabaseOptions): Promise<void> {
  if (poolCounts(app.db) === undefined) throw replicasNeedServer(options)
  const router = await openReplicas(app.db, {
    urls: options.readUrls ?? [],
    maxLagMillis: options.readMaxLagMillis ?? 5_000,
    connectTimeoutMillis: options.readConnectTimeoutMillis ?? 1_000,
    poolSize: options.poolSize,
    statementTimeoutMillis: options.statementTimeoutMillis,
    preparedStatements: options.preparedStatements,
    redisUrl: options.redisUrl,
    warn: (err, message) => { app.log.warn({ err }, message) }
  })
  app.addHook('onClose', async () => { await router.close() })
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS' || reply.statusCode >= 400) return payload
    if (readRoutes.has(request.routeOptions.url ?? '') && !wroteOnReadRoute.has(request)) return payload
    const user = (request as { user?: { sub?: unknown } | null }).user?.sub
    if (typeof user !== 'number') return payload
    // Before the answer leaves: the caller's next request may reach another instance at once. When
    // Redis fails here, its lookups fail too, and reads then go to the primary.
    await afterWrite(app.db, user)?.catch((err: unknown) => { app.log.warn({ err }, 'read replicas: the position of a write could not be kept') })
    return payload
  })
}

/**
 * Opens the database (PGlite or a `pg` pool), applies migrations, decorates `app.db`, closes it on
 * shutdown once the statements still running (of requests whose clients left) have finished. With
 * neither `databaseUrl` nor `dataDir` the database is embedded and in memory.
 * @example
 * await app.register(database, { databaseUrl: 'postgres://app@127.0.0.1:5432/app' })
 */
export default fp(database, { name: 'tandem-database', fastify: '5.x' })
