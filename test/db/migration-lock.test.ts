// The migrations at start take turns under a lock that holds through PgBouncer in transaction mode
// (issue 41). Kysely's own lock is a session-level advisory lock taken outside the migrations'
// transaction: behind PgBouncer, instances starting together on an empty database both migrated (a
// duplicate pg_trgm extension), or waited on a lock left held on one of PgBouncer's server connections.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { sql, type Kysely, type Migration } from 'kysely'
import t from 'tap'
import { connect, migrateOptions, type ConnectOptions, type Db } from '../../db/connect.js'
import { migrateHost } from '../../db/migrate.js'
import { migrations } from '../../db/migrations/index.js'
import { configFromEnv } from '../../plugins/config.js'
import { connectOptions } from '../../plugins/database.js'
import { serverDatabase, serverUrl, withDatabase, type Test } from '../helpers/database.js'
import { freePort } from '../helpers/processes.js'
import { onServer, until } from '../helpers/replicas.js'

const run = promisify(execFile)
const server = serverUrl()
const needsServer = server === undefined ? 'needs DATABASE_URL (a PostgreSQL server: the race needs several sessions)' : false
const needsBouncer = existsSync('/usr/sbin/pgbouncer') ? false : "needs Debian's pgbouncer (apt-get install pgbouncer; .ci/run installs it)"

/** A PgBouncer in transaction mode in front of the DATABASE_URL server (.ci/pgbouncer.sh), stopped when `t` ends. */
async function bouncer (t: Test): Promise<string> {
  const script = fileURLToPath(new URL('../../.ci/pgbouncer.sh', import.meta.url))
  const port = String(await freePort())
  const { stdout } = await run(script, ['start', port, new URL(server as string).port])
  t.teardown(() => run(script, ['stop', port]))
  return stdout.trim().split('\n').at(-1) as string
}

/** `work`, or a failure once `ms` have passed: a start stuck on a lock fails the test instead of hanging it. */
async function within<T> (ms: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((resolve, reject) => { timer = setTimeout(() => { reject(new Error(`${what} had not ended after ${ms / 1000} s`)) }, ms) })
  try {
    return await Promise.race([work, late])
  } finally {
    clearTimeout(timer)
  }
}

/** A host's migration that counts its runs, and can be held half-way (its table made, not committed). */
function hostMigration (): { migrations: Record<string, Migration>, runs: () => number, entered: Promise<void>, finish: () => void } {
  let runs = 0
  let entered = (): void => {}
  let finish = (): void => {}
  const enteredPromise = new Promise<void>((resolve) => { entered = resolve })
  const finished = new Promise<void>((resolve) => { finish = resolve })
  const up = async (db: Kysely<any>): Promise<void> => {
    runs++
    await db.schema.createTable('notes').addColumn('id', 'serial', (c) => c.primaryKey()).execute()
    entered()
    await finished
  }
  return { migrations: { '0001_notes': { up } }, runs: () => runs, entered: enteredPromise, finish }
}

/** How many times each of Tandem's migrations is recorded, and the host's. */
async function recorded (db: Db): Promise<{ tandem: Record<string, number>, host: string[] }> {
  const tandem = await sql<{ name: string, n: number }>`select name, count(*)::int as n from kysely_migration group by name`.execute(db)
  const host = await sql<{ name: string }>`select name from host_migrations order by name`.execute(db)
  return { tandem: Object.fromEntries(tandem.rows.map(({ name, n }) => [name, n])), host: host.rows.map(({ name }) => name) }
}

const once = Object.fromEntries(Object.keys(migrations).map((name) => [name, 1]))

const routes: Array<[string, false | string, (t: Test) => Promise<{ url: (name: string) => string, options: ConnectOptions }>]> = [
  ['directly', needsServer, async () => ({ url: (name) => withDatabase(server as string, name), options: {} })],
  ['through PgBouncer in transaction mode', needsServer || needsBouncer, async (t) => {
    const through = await bouncer(t)
    return { url: (name) => withDatabase(through, name), options: { preparedStatements: false } }
  }]
]

for (const [route, skip, open] of routes) {
  t.test(`instances starting together on an empty database, ${route}`, { skip }, async (t) => {
    const { url, options } = await open(t)
    const databaseName = async (): Promise<string> => new URL(await serverDatabase(t, server as string, 'tandem_lock')).pathname.slice(1)

    t.test('regression: instances starting together through PgBouncer migrated twice or waited on a leaked lock: all start, each migration runs once (a pool of one connection too)', async (t) => {
      // Several rounds: which of PgBouncer's server connections a statement lands on varies.
      for (let round = 0; round < 4; round++) {
        const name = await databaseName()
        const host = hostMigration()
        host.finish()
        const starts = [1, 5, 5, 5].map(async (poolSize) => {
          const db = await connect({ ...options, databaseUrl: url(name), poolSize })
          try {
            await migrateHost(db, host.migrations)
            return await recorded(db)
          } finally {
            await db.destroy()
          }
        })
        const results = await within(60_000, `round ${round}'s four starts`, Promise.allSettled(starts))
        t.same(results.filter((result) => result.status === 'rejected').map((result) => String(result.reason)), [], `round ${round}: no start failed`)
        for (const result of results) if (result.status === 'fulfilled') t.same(result.value, { tandem: once, host: ['0001_notes'] }, `round ${round}: each migration recorded once`)
        t.equal(host.runs(), 1, `round ${round}: the host's migration ran once`)
      }
    })

    t.test('a start waits while another instance migrates, then finds the migrations applied and runs none', async (t) => {
      const name = await databaseName()
      const first = await connect({ ...options, databaseUrl: url(name) })
      const second = await connect({ ...options, databaseUrl: url(name) })
      t.teardown(async () => { await Promise.all([first.destroy(), second.destroy()]) })
      const host = hostMigration()
      const migrating = migrateHost(first, host.migrations)
      await within(30_000, 'the first migration', host.entered)
      const waiting = migrateHost(second, host.migrations)
      // The second start's migration waits on a lock in the database while the first holds it.
      await until(async () => (await onServer<{ n: number }>(withDatabase(server as string, name),
        "select count(*)::int as n from pg_stat_activity where datname = $1 and wait_event_type = 'Lock'", [name]))[0]?.n === 1, 30_000, 'the second start to wait')
      t.equal(host.runs(), 1, 'the second has not run the migration')
      host.finish()
      await within(30_000, 'both migrations', Promise.all([migrating, waiting]))
      t.equal(host.runs(), 1, 'the migration ran once')
      t.same((await recorded(second)).host, ['0001_notes'])
    })

    t.test('a start that waits longer than MIGRATION_LOCK_TIMEOUT fails, naming it; the first migrates', async (t) => {
      const name = await databaseName()
      const first = await connect({ ...options, databaseUrl: url(name) })
      const config = connectOptions(configFromEnv({ DATABASE_URL: url(name), MIGRATION_LOCK_TIMEOUT: '300', DATABASE_PREPARED_STATEMENTS: String(options.preparedStatements ?? true) }))
      const second = await connect(config)
      const byOption = await connect({ ...options, databaseUrl: url(name), migrationLockTimeout: 300 })
      t.teardown(async () => { await Promise.all([first.destroy(), second.destroy(), byOption.destroy()]) })
      const host = hostMigration()
      const migrating = migrateHost(first, host.migrations)
      await within(30_000, 'the first migration', host.entered)
      const refused = await migrateHost(second, host.migrations, migrateOptions(config)).then(() => undefined, (error: Error) => error)
      t.match(refused?.message, /^the database migrations waited longer than MIGRATION_LOCK_TIMEOUT for a lock .*raise MIGRATION_LOCK_TIMEOUT$/)
      t.notMatch(refused?.message, /postgres:|127\.0\.0\.1/, 'no URL in the message')
      const refusedOption = await migrateHost(byOption, host.migrations, migrateOptions({ migrationLockTimeout: 300 })).then(() => undefined, (error: Error) => error)
      t.match(refusedOption?.message, /waited longer than migrationLockTimeout/, 'a host\'s option by its name')
      host.finish()
      await within(30_000, 'the first migration', migrating)
      t.equal(host.runs(), 1)
      t.same((await recorded(second)).host, ['0001_notes'], 'the first one migrated')
    })
  })
}

t.test('the embedded database (one connection) migrates from empty under the lock, and a host\'s migrations once', async (t) => {
  const db = await connect({})
  t.teardown(() => db.destroy())
  const host = hostMigration()
  host.finish()
  await migrateHost(db, host.migrations)
  await migrateHost(db, host.migrations)
  t.same(await recorded(db), { tandem: once, host: ['0001_notes'] })
  t.equal(host.runs(), 1)
})
