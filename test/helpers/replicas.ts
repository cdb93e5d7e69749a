// A primary and a streaming replica of their own (.ci/replica.sh), for the tests of read replicas:
// they pause the replay and stop the replica, which the shared DATABASE_URL server must never see.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import pg from 'pg'
import { withDatabase, type Test } from './database.js'
import { freePort } from './processes.js'

const run = promisify(execFile)
const script = fileURLToPath(new URL('../../.ci/replica.sh', import.meta.url))

export interface ReplicaPair {
  /** The primary's and the replica's server URLs (database `postgres`). */
  primary: string
  replica: string
  stopReplica: () => Promise<void>
  startReplica: () => Promise<void>
}

/** Why the tests of replicas cannot run here, or false when they can. */
export function replicasSkip (): string | false {
  if (process.env.DATABASE_URL === undefined || process.env.DATABASE_URL === '') {
    return 'read replicas need a real PostgreSQL: set DATABASE_URL (the test starts a primary and a streaming replica of its own with .ci/replica.sh)'
  }
  if (!existsSync('/usr/lib/postgresql') || !existsSync('/usr/bin/pg_basebackup')) return 'read replicas need PostgreSQL\'s server binaries and pg_basebackup (apt-get install postgresql)'
  return false
}

/** Starts a primary and its replica on free ports; both are stopped and removed when the test ends. */
export async function replicaPair (t: Test): Promise<ReplicaPair> {
  const env = { ...process.env, PRIMARY_PORT: String(await freePort()), REPLICA_PORT: String(await freePort()) }
  const call = async (command: string): Promise<string> => (await run(script, [command], { env, timeout: 120_000 })).stdout
  t.teardown(() => call('stop'))
  const [primary, replica] = (await call('start')).trim().split('\n').slice(-2)
  if (primary === undefined || replica === undefined) throw new Error('.ci/replica.sh printed no URLs')
  return { primary, replica, stopReplica: async () => { await call('stop-replica') }, startReplica: async () => { await call('start-replica') } }
}

/** Runs one statement on `url` with a client of its own; its rows. */
export async function onServer<R extends pg.QueryResultRow = Record<string, unknown>> (url: string, statement: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => {})
  await client.connect()
  try {
    return (await client.query<R>(statement, values)).rows
  } finally {
    await client.end()
  }
}

/** The database `name` of a database server's URL. */
export const databaseOf = (server: string, name: string): string => withDatabase(server, name)

/** Waits until `condition` holds (checked every 100 ms), or throws after `ms`. */
export async function until (condition: () => Promise<boolean> | boolean, ms = 20_000, what = 'the condition'): Promise<void> {
  const deadline = Date.now() + ms
  while (!await condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** Transactions the replica has committed in database `name` (its reads among them). */
export async function replicaCommits (replica: string, name: string): Promise<number> {
  const [row] = await onServer<{ n: string }>(replica, 'select xact_commit::text as n from pg_stat_database where datname = $1', [name])
  return Number(row?.n ?? 0)
}
