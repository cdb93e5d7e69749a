// The streaming replica the replica case reads through: a standby of the bench's own server (or of
// DATABASE_URL's) made by .ci/replica.sh with pg_basebackup, on a free port, removed at the end.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from './servers.js'

const run = promisify(execFile)
const script = join(new URL('..', import.meta.url).pathname, '.ci/replica.sh')

export interface Replica {
  /** `postgres://…:<port>/postgres` of the standby (its maintenance database). */
  url: string
  /** Stops the standby and removes its data directory; the primary is left alone. */
  stop: () => Promise<void>
}

/** What .ci/replica.sh said last on stderr (its own log lines, or the tool that failed). */
function lastWords (error: unknown): string {
  const stderr = (error as { stderr?: unknown }).stderr
  const lines = (typeof stderr === 'string' ? stderr : '').split('\n').map((line) => line.trim()).filter((line) => line !== '')
  return lines.at(-1)?.replace(/^\[replica\.sh\] /, '') ?? (error as Error).message.split('\n')[0] ?? 'unknown error'
}

/**
 * A streaming replica of the server at `serverUrl`, or why none could be made (no pg_basebackup, a
 * server that refuses replication connections, a standby that does not start): the replica case
 * then says so in the report rather than being left out silently.
 */
export async function openReplica (serverUrl: string, log: (line: string) => void): Promise<{ replica: Replica } | { notMade: string }> {
  const server = new URL(serverUrl)
  const env = {
    ...process.env,
    PRIMARY_HOST: server.hostname === '' || server.hostname === 'localhost' ? '127.0.0.1' : server.hostname,
    PRIMARY_PORT: server.port === '' ? '5432' : server.port,
    PRIMARY_USER: decodeURIComponent(server.username) || 'postgres',
    ...server.password === '' ? {} : { PGPASSWORD: decodeURIComponent(server.password) },
    REPLICA_PORT: String(await freePort())
  }
  const call = async (command: string) => (await run('bash', [script, command], { env, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 })).stdout
  const remove = async () => { await call('remove-standby') }
  log(`making a streaming replica of ${env.PRIMARY_HOST}:${env.PRIMARY_PORT} on port ${env.REPLICA_PORT} (.ci/replica.sh standby)`)
  const started = performance.now()
  try {
    const url = (await call('standby')).trim().split('\n').at(-1) ?? ''
    if (!url.startsWith('postgres://')) throw new Error('.ci/replica.sh printed no URL')
    log(`replica ready in ${((performance.now() - started) / 1000).toFixed(1)} s: ${url}`)
    return { replica: { url, stop: remove } }
  } catch (error) {
    await remove().catch(() => {})
    return { notMade: `no streaming replica could be made of the bench's server (.ci/replica.sh standby): ${lastWords(error)}` }
  }
}

/** Reads each pool of an API with read replicas served so far, from its `/ready`. */
export async function poolReads (origin: string): Promise<{ replica: number, primary: number }> {
  const response = await fetch(`${origin}/ready`)
  const { pools = [] } = await response.json() as { pools?: Array<{ pool: string, reads: number }> }
  const sum = (replica: boolean) => pools.filter(({ pool }) => (pool === 'primary') !== replica).reduce((n, { reads }) => n + reads, 0)
  return { replica: sum(true), primary: sum(false) }
}

/** Waits until the API's first replica is `up` (polled, within the maximum lag); false after `ms`. */
export async function replicaUp (origin: string, ms = 60_000): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const ready = await fetch(`${origin}/ready`).then(async (r) => await r.json() as { pools?: Array<{ pool: string, state: string }> }, () => ({ pools: [] }))
    if (ready.pools?.some(({ pool, state }) => pool !== 'primary' && state === 'up') === true) return true
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  return false
}
