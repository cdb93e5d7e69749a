// Helpers for tests that run the real server entry point in child processes.
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { withDatabase } from './helper.js'

interface Test { teardown: (fn: () => unknown) => void }

const root = fileURLToPath(new URL('..', import.meta.url))

export const SERVER_SECRET = 'a-secret-shared-by-the-spawned-servers'

export interface Server {
  child: ChildProcessByStdio<null, Readable, Readable>
  url: string
  /** Everything the process wrote to stdout so far (pino's JSON lines). */
  stdout: () => string
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null, stderr: string }>
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
 * Starts `server.ts` as `npm start` does (`node --import tsx`: one process, so a signal reaches the
 * server itself rather than tsx's CLI, which turns a SIGTERM it cannot relay in 30 ms into a
 * SIGKILL) with this environment (and nothing else from ours), waits until `/health`
 * answers, and kills it when the test ends if it is still running.
 */
export async function startServer (t: Test, env: Record<string, string>): Promise<Server> {
  const port = await freePort()
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', TZ: 'UTC', DATA_DIR: 'memory://', LOG_LEVEL: 'warn', JWT_SECRET: SERVER_SECRET, ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const exited = once(child, 'exit').then(([code, signal]) => ({ code: code as number | null, signal: signal as NodeJS.Signals | null, stderr }))
  t.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 90_000
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the server exited at start (${child.exitCode}): ${stderr}`)
    const res = await fetch(`${url}/health`).catch(() => undefined)
    if (res?.status === 200) break
    if (Date.now() > deadline) throw new Error(`the server did not answer /health: ${stderr}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  return { child, url, stdout: () => stdout, exited }
}

/** A fresh, empty database on the `DATABASE_URL` server, dropped when the test ends; its URL. */
export async function freshDatabase (t: Test, serverUrl: string): Promise<string> {
  const name = `tandem_proc_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  t.teardown(async () => {
    const cleanup = new pg.Client({ connectionString: serverUrl })
    await cleanup.connect()
    await cleanup.query(`drop database if exists ${name} with (force)`)
    await cleanup.end()
  })
  return withDatabase(serverUrl, name)
}

/** A fresh id so that names and e-mails made by one run never meet another's. */
export const runId = (): string => randomBytes(4).toString('hex')
