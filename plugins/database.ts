import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { Migration } from 'kysely'
import { connect, migrateHost, settle, type ConnectOptions, type Db } from '../db/connect.js'
import { withSettingNames } from './config.js'
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
    statementTimeoutMillis: config.databaseStatementTimeout === 0 ? undefined : config.databaseStatementTimeout
  })
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The Kysely instance every Tandem route and resolver queries through. */
    db: Db
  }
}

async function database (app: FastifyInstance, options: DatabaseOptions): Promise<void> {
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
  if (options.migrations !== undefined) await migrateHost(app.db, options.migrations)
}

/**
 * Opens the database (PGlite or a `pg` pool), applies migrations, decorates `app.db`, closes it on
 * shutdown once the statements still running (of requests whose clients left) have finished. With
 * neither `databaseUrl` nor `dataDir` the database is embedded and in memory.
 * @example
 * await app.register(database, { databaseUrl: 'postgres://app@127.0.0.1:5432/app' })
 */
export default fp(database, { name: 'tandem-database', fastify: '5.x' })
