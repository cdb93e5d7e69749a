// Helpers for tests that run the real server entry point in child processes.
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { Readable } from 'node:stream'
import { serverNodeFlags } from '../../bench/servers.js'
import { migratedDataDir, serverDatabase, type Test } from './database.js'
import { root } from './root.js'

export const SERVER_SECRET = 'a-secret-shared-by-the-spawned-servers'

export interface Spawned {
  child: ChildProcessByStdio<null, Readable, Readable>
  /** Everything the process wrote to stdout so far (pino's JSON lines). */
  stdout: () => string
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null, stderr: string }>
}

export interface Server extends Spawned {
  url: string
}

export async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const address = server.address()
  server.close()
  return typeof address === 'object' && address !== null ? address.port : 0
}

/**
 * Starts the server as `npm start` does (scripts/start.mjs with the script's Node flags: one
 * process, so a signal reaches the server itself) with this environment and nothing else from ours,
 * and kills it when the test ends if it is still running. `DATA_DIR` is `memory://` unless given:
 * free for a start that its configuration stops, but one that gets as far as opening the database
 * then pays an initdb and the migrations (seconds of CPU) — give it a `migratedDataDir(t)`.
 */
export function spawnServer (t: Test, env: Record<string, string>): Spawned {
  // tap's process tracking (@tapjs/processinfo) puts its module loader into the NODE_OPTIONS of every
  // child a test starts, whatever environment it is given: under it a server took about 1 s more CPU,
  // and twice as long, to start. `env -u` takes it out again, so that the server runs as `npm start`
  // runs it (env replaces itself with node: the child's pid is the server's), with the V8 flags of
  // package.json's start script: without --liftoff-only a start that opened the embedded database
  // took about 1 s more CPU, V8 optimizing PGlite's WebAssembly in the background.
  const child = spawn('env', ['-u', 'NODE_OPTIONS', process.execPath, ...serverNodeFlags(), 'scripts/start.mjs'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', TZ: 'UTC', DATA_DIR: 'memory://', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null, stderr }))
  // Waited for: the data directory's teardown (registered before, so run after) then removes it whole,
  // where a server still writing as it died had left its files behind.
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGKILL')
    await exited
  })
  return { child, stdout: () => stdout, exited }
}

/**
 * `spawnServer` on a free port with a known JWT secret, waiting until `/health` answers. Without
 * `DATABASE_URL` or `DATA_DIR` it runs on a migrated data directory of its own (`migratedDataDir`).
 */
export async function startServer (t: Test, env: Record<string, string>): Promise<Server> {
  const port = await freePort()
  const database: Record<string, string> = 'DATABASE_URL' in env || 'DATA_DIR' in env ? {} : { DATA_DIR: await migratedDataDir(t) }
  const spawned = spawnServer(t, { JWT_SECRET: SERVER_SECRET, ...database, ...env, PORT: String(port) })
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 90_000
  for (;;) {
    const { child } = spawned
    if (child.exitCode !== null) throw new Error(`the server exited at start (${child.exitCode}): ${(await spawned.exited).stderr}`)
    const res = await fetch(`${url}/health`).catch(() => undefined)
    if (res?.status === 200) break
    if (Date.now() > deadline) throw new Error('the server did not answer /health')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return { ...spawned, url }
}

/** A fresh, empty database on the `DATABASE_URL` server, dropped when the test ends; its URL. */
export const freshDatabase = (t: Test, serverUrl: string): Promise<string> => serverDatabase(t, serverUrl, 'tandem_proc')

/** A fresh id so that names and e-mails made by one run never meet another's. */
export const runId = (): string => randomBytes(4).toString('hex')
