// Migrations under a lock of Tandem's own that holds through a transaction-mode pooler.
//
// Kysely's PostgresAdapter takes a session-level `pg_advisory_lock` before the migrations'
// transaction and releases it after. Behind PgBouncer in transaction mode those three steps may
// each run on another server connection: a second instance whose lock statement lands on the
// server connection that holds the first's lock is granted it too (advisory locks are re-entrant
// per session) and migrates beside it, and an unlock sent to another server connection leaves the
// lock held there, where every later start that lands elsewhere waits on it. Here everything runs
// in ONE transaction that first takes a transaction-level advisory lock: a pooler keeps a
// transaction on one server connection, and the lock ends with it, whatever happens to the client.
import { CompiledQuery, Kysely, Migrator, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler, sql, type DatabaseConnection, type Dialect, type Driver, type Migration, type QueryResult } from 'kysely'
import type { Db } from './connect.js'
import { migrations as tandemMigrations } from './migrations/index.js'

/** The default of `MIGRATION_LOCK_TIMEOUT`, in milliseconds (schema/options.ts). */
export const MIGRATION_LOCK_TIMEOUT = 60_000

/** First half of the key of Tandem's migration locks (`pg_advisory_xact_lock(int, int)`): "Tand". */
const TANDEM = 0x54616e64

export interface MigrateOptions {
  /**
   * How long the migrations' transaction waits for any one lock (another instance's migrations, a
   * table a migration changes) before the start fails, in milliseconds. Default: 60000.
   */
  lockTimeoutMillis?: number | undefined
  /** The setting to name when the wait times out (`MIGRATION_LOCK_TIMEOUT`, or the option's name). */
  lockTimeoutSetting?: string | undefined
}

interface MigrationSet {
  /** Second half of the lock's key: Tandem's migrations and a host's take a lock each. */
  key: number
  migrations: Readonly<Record<string, Migration>>
  /** Kysely's tables, as they were named before (a database migrated earlier keeps its record). */
  table?: string
  lockTable?: string
}

/** Brings Tandem's own schema up to date. Safe to run from several instances at once, through PgBouncer too. */
export async function migrate (db: Db, options: MigrateOptions = {}): Promise<void> {
  await migrateLocked(db, { key: 1, migrations: tandemMigrations }, options)
}

/** Applies a host application's migrations, recorded in `host_migrations`, apart from Tandem's own. */
export async function migrateHost (db: Db, migrations: Readonly<Record<string, Migration>>, options: MigrateOptions = {}): Promise<void> {
  await migrateLocked(db, { key: 2, migrations, table: 'host_migrations', lockTable: 'host_migrations_lock' }, options)
}

/** SQLSTATE lock_not_available: a lock was not granted within `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03'

async function migrateLocked (db: Db, set: MigrationSet, options: MigrateOptions): Promise<void> {
  const timeout = options.lockTimeoutMillis ?? MIGRATION_LOCK_TIMEOUT
  // One pooled connection for everything: on PGlite, the only one, so nothing may wait for another.
  await db.connection().execute(async (connection) => {
    const run = async (statement: string): Promise<void> => { await connection.executeQuery(CompiledQuery.raw(statement)) }
    await run('begin')
    try {
      // The wait for the lock is bounded by the lock timeout alone; the statement timeout (meant for
      // requests) is the migrations' again once the lock is held.
      const [previous] = (await sql<{ statementTimeout: string }>`
        select current_setting('statement_timeout') as "statementTimeout",
          set_config('lock_timeout', ${String(timeout)}, true)`.execute(connection)).rows
      await sql`select set_config('statement_timeout', '0', true)`.execute(connection)
      await sql`select pg_advisory_xact_lock(${sql.lit(TANDEM)}, ${sql.lit(set.key)})`.execute(connection)
      await sql`select set_config('statement_timeout', ${previous?.statementTimeout ?? '0'}, true)`.execute(connection)
      const migrator = new Migrator({
        db: new Kysely<any>({ dialect: new InTransactionDialect(connection) }),
        provider: { getMigrations: async () => ({ ...set.migrations }) },
        // Already in the transaction above, which the lock belongs to.
        disableTransactions: true,
        ...(set.table === undefined ? {} : { migrationTableName: set.table }),
        ...(set.lockTable === undefined ? {} : { migrationLockTableName: set.lockTable })
      })
      const { error } = await migrator.migrateToLatest()
      if (error !== undefined) throw error
      await run('commit')
    } catch (error) {
      await run('rollback').catch(() => {})
      if ((error as { code?: unknown } | null)?.code !== LOCK_NOT_AVAILABLE) throw error
      const setting = options.lockTimeoutSetting ?? 'migrationLockTimeout'
      throw new Error(`the database migrations waited longer than ${setting} for a lock (another instance still migrating, ` +
        `or a long transaction on a table a migration changes): nothing was migrated; start again, or raise ${setting}`, { cause: error })
    }
  })
}

/**
 * A dialect whose one connection is `connection`, a pooled connection of Tandem's Kysely already in
 * the migrations' transaction: the Migrator's statements (its tables, the migrations) run there.
 */
class InTransactionDialect implements Dialect {
  constructor (readonly connection: Kysely<any>) {}
  createAdapter (): PostgresAdapter { return new InTransactionAdapter() }
  createDriver (): Driver { return new InTransactionDriver(this.connection) }
  createQueryCompiler (): PostgresQueryCompiler { return new PostgresQueryCompiler() }
  createIntrospector (db: Kysely<any>): PostgresIntrospector { return new PostgresIntrospector(db) }
}

/** PostgreSQL's adapter without Kysely's session-level lock: the transaction already holds Tandem's. */
class InTransactionAdapter extends PostgresAdapter {
  override async acquireMigrationLock (): Promise<void> {}
  override async releaseMigrationLock (): Promise<void> {}
}

class InTransactionDriver implements Driver {
  readonly #connection: DatabaseConnection
  constructor (connection: Kysely<any>) {
    this.#connection = {
      executeQuery: async <R>(compiled: CompiledQuery): Promise<QueryResult<R>> => await connection.executeQuery<R>(compiled),
      streamQuery: async function * () { throw new Error('the migrations stream no rows') }
    }
  }

  async init (): Promise<void> {}
  async acquireConnection (): Promise<DatabaseConnection> { return this.#connection }
  async releaseConnection (): Promise<void> {}
  async destroy (): Promise<void> {}
  // The Migrator opens none (`disableTransactions`): the transaction is migrateLocked's.
  async beginTransaction (): Promise<void> { throw new Error('the migrations already run in a transaction') }
  async commitTransaction (): Promise<void> { throw new Error('the migrations already run in a transaction') }
  async rollbackTransaction (): Promise<void> { throw new Error('the migrations already run in a transaction') }
}
