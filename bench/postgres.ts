import { execFile } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'

const run = promisify(execFile)

/** The port of the bench's own PostgreSQL server (the tests' one is 54329). */
export const OWN_PORT = 54339
const root = new URL('..', import.meta.url).pathname
const script = join(root, '.ci/postgres.sh')
const dataDir = `/tmp/tandem-pg-${OWN_PORT}`

export interface PgServer {
  /** `postgres://…/postgres` of the server (its maintenance database). */
  url: string
  /** What the run did: used DATABASE_URL, reused a kept server, or started one. */
  origin: 'DATABASE_URL' | 'reused' | 'started'
  /** Stops the server if this run started it and was not asked to keep it. */
  stop: () => Promise<void>
}

function bindir (): string {
  const dirs = ['15', ...(existsSync('/usr/lib/postgresql') ? readdirSync('/usr/lib/postgresql').sort().reverse() : [])]
  const found = dirs.map((v) => `/usr/lib/postgresql/${v}/bin`).find((dir) => existsSync(`${dir}/pg_ctl`))
  if (found === undefined) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql')
  return found
}

/** Runs a PostgreSQL tool as the `postgres` OS user when we are root (the server refuses root), as .ci/postgres.sh does. */
async function asPostgres (tool: string, args: string[]): Promise<void> {
  const command = join(bindir(), tool)
  const root = process.getuid?.() === 0
  await run(root ? 'runuser' : command, root ? ['-u', 'postgres', '--', command, ...args] : args, { cwd: '/tmp' })
}

async function answers (url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 })
  try {
    await client.connect()
    await client.query('select 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

async function query (url: string, text: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await client.query(text)
  } finally {
    await client.end()
  }
}

/**
 * The server to measure against: `DATABASE_URL` when given (never stopped), else our own on
 * `OWN_PORT`, started with .ci/postgres.sh and restarted once with pg_stat_statements loaded, so
 * that statements per request can be counted. With `keep`, our server stays up for the next run
 * (which then reuses it and its seeded database, and leaves it running); otherwise the run that
 * started it stops it, data and all.
 */
export async function openServer (databaseUrl: string | undefined, keep: boolean, log: (line: string) => void): Promise<PgServer> {
  if (databaseUrl !== undefined) return { url: databaseUrl, origin: 'DATABASE_URL', stop: async () => {} }
  const url = `postgres://postgres@127.0.0.1:${OWN_PORT}/postgres`
  const stop = async () => {
    if (keep) log(`PostgreSQL left running on ${OWN_PORT} (--keep-db); stop it with: PGPORT=${OWN_PORT} .ci/postgres.sh stop`)
    else await run('bash', [script, 'stop'], { env: { ...process.env, PGPORT: String(OWN_PORT) } })
  }
  if (await answers(url)) {
    log(`reusing the PostgreSQL server already on port ${OWN_PORT}`)
    // Kept by an earlier run (its data set too): only the run that started a server stops it.
    return { url, origin: 'reused', stop: async () => { log(`PostgreSQL on ${OWN_PORT} left running: this run did not start it`) } }
  }
  log(`starting PostgreSQL on port ${OWN_PORT} (.ci/postgres.sh)`)
  await run('bash', [script, 'start'], { env: { ...process.env, PGPORT: String(OWN_PORT) } })
  await query(url, 'alter system set shared_preload_libraries = \'pg_stat_statements\'')
  // pg_ctl restart reuses the start's options (postmaster.opts); -l keeps the server off our pipes.
  await asPostgres('pg_ctl', ['-D', dataDir, '-l', `${dataDir}.log`, '-m', 'fast', '-w', '-t', '60', 'restart'])
  return { url, origin: 'started', stop }
}

/** `url` with another database name. */
export function withDatabase (url: string, database: string): string {
  const parsed = new URL(url)
  parsed.pathname = `/${database}`
  return parsed.toString()
}

export async function createDatabase (serverUrl: string, database: string): Promise<void> {
  await query(serverUrl, `create database ${pg.escapeIdentifier(database)}`)
}

export async function dropDatabase (serverUrl: string, database: string): Promise<void> {
  await query(serverUrl, `drop database if exists ${pg.escapeIdentifier(database)} with (force)`)
}

export async function databaseExists (serverUrl: string, database: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: serverUrl })
  await client.connect()
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [database])
    return rowCount === 1
  } finally {
    await client.end()
  }
}
