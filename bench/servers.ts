import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'

const root = new URL('..', import.meta.url).pathname

export interface Server {
  name: string
  pid: number
  /** `http://127.0.0.1:<port>` */
  origin: string
  /** How it was started, e.g. `node dist/server.js`. */
  command: string
  stop: () => Promise<void>
}

/**
 * The V8 flags of `npm start` (package.json's `start` script), so that the benchmarked server runs
 * as a started one does; the script is their one source.
 */
export function serverNodeFlags (): string[] {
  const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
  return (scripts.start ?? '').split(/\s+/).filter((word) => /^--(?!import\b)[a-z-]+(=\S+)?$/.test(word))
}

export async function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => { resolve(typeof address === 'object' && address !== null ? address.port : 0) })
    })
  })
}

function tail (file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-20).join('\n')
  } catch {
    return ''
  }
}

async function exited (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  await new Promise((resolve) => child.once('exit', resolve))
}

/** Starts `node args…` with `env`, its output in `logFile`, and waits until `readyPath` answers 200. */
async function start (name: string, args: string[], env: Record<string, string>, readyPath: string, logFile: string): Promise<Server> {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const log = createWriteStream(logFile)
  const child = spawn(process.execPath, args, {
    cwd: root,
    // A clean environment: nothing of the caller's (REDIS_URL, DATA_DIR…) reaches the servers.
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', TZ: 'UTC', ...env, HOST: '127.0.0.1', PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  child.stdout?.pipe(log)
  child.stderr?.pipe(log)
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
    const killer = setTimeout(() => child.kill('SIGKILL'), 15_000)
    await exited(child)
    clearTimeout(killer)
  }
  const deadline = Date.now() + 120_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${name} exited with code ${child.exitCode} at start; ${logFile}:\n${tail(logFile)}`)
    const ready = await fetch(origin + readyPath).then((r) => r.ok, () => false)
    if (ready) return { name, pid: child.pid ?? 0, origin, command: `node ${args.join(' ')}`, stop }
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
  await stop()
  throw new Error(`${name} did not become ready within 120 s; ${logFile}:\n${tail(logFile)}`)
}

/**
 * Compiles the package (`npm run build`) so that the API runs as it does in production. When the
 * build fails, or there is no dist/server.js, the sources run through tsx's loader instead (the
 * same code, compiled on load); the report says which.
 */
export async function apiEntryPoint (build: boolean, log: (line: string) => void): Promise<string[]> {
  const fromSources = ['--import', 'tsx', 'server.ts']
  if (build) {
    log('npm run build')
    try {
      await promisify(execFile)('npm', ['run', 'build'], { cwd: root })
    } catch (error) {
      log(`npm run build failed (${(error as Error).message.split('\n')[0] ?? ''}): running server.ts through tsx`)
      return [...serverNodeFlags(), ...fromSources]
    }
  }
  if (existsSync(join(root, 'dist/server.js'))) return [...serverNodeFlags(), 'dist/server.js']
  log('no dist/server.js: running server.ts through tsx')
  return [...serverNodeFlags(), ...fromSources]
}

/**
 * The module of the bench's declared resource (bench/declared.ts) as the API's entry can import it:
 * the TypeScript itself when the API runs through tsx, else transpiled once into .tandem/bench/.
 */
export async function benchResourcesModule (entry: string[]): Promise<string> {
  const source = join(root, 'bench/declared.ts')
  if (entry.includes('tsx')) return source
  const { transformSync } = await import('esbuild')
  const out = join(root, '.tandem/bench/declared.mjs')
  mkdirSync(dirname(out), { recursive: true })
  writeFileSync(out, transformSync(readFileSync(source, 'utf8'), { loader: 'ts', format: 'esm', target: 'node20' }).code)
  return out
}

export async function startApi (entry: string[], env: Record<string, string>, logFile: string, name = 'api'): Promise<Server> {
  return start(name, entry, env, '/ready', logFile)
}

export async function startBaseline (databaseUrl: string, poolSize: number, logFile: string): Promise<Server> {
  return start('baseline', ['--import', 'tsx', 'bench/baseline.ts'], { DATABASE_URL: databaseUrl, POOL_SIZE: String(poolSize) }, '/health', logFile)
}

/** Fastify + the baseline's query and a response schema (bench/floor.ts): what the framework alone costs. */
export async function startFloor (databaseUrl: string, jwtSecret: string, poolSize: number, logFile: string): Promise<Server> {
  return start('floor', ['--import', 'tsx', 'bench/floor.ts'], { DATABASE_URL: databaseUrl, JWT_SECRET: jwtSecret, POOL_SIZE: String(poolSize) }, '/health', logFile)
}
