import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { envName, validateOptions } from '../plugins/config.js'
import { freePort } from './processes.js'

const root = fileURLToPath(new URL('..', import.meta.url))

interface Run { code: number | null, stderr: string }

/** Starts the real server entry point with the given environment and collects what it says. */
function start (env: Record<string, string>) {
  // One process (tsx as a loader, not its CLI), so that SIGTERM reaches the server itself.
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', DATA_DIR: 'memory://', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  child.stdout.resume()
  const exited: Promise<Run> = once(child, 'exit').then(([code]) => ({ code: code as number | null, stderr }))
  return { child, exited }
}

const badConfigs: Array<[string, Record<string, string>, RegExp]> = [
  ['an unparsable number', { RATE_LIMIT_MAX: 'lots' }, /RATE_LIMIT_MAX must be integer/],
  ['a port out of range', { PORT: '70000' }, /PORT must be <= 65535/],
  ['production without a secret', { NODE_ENV: 'production' }, /JWT_SECRET is required when NODE_ENV is production/],
  ['a bad log level', { LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
  ['a pool of no connections', { DATABASE_POOL_SIZE: '0' }, /DATABASE_POOL_SIZE must be >= 1/],
  ['an unreachable database', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' }, /cannot start/]
]

for (const [label, env, message] of badConfigs) {
  t.test(`${label} stops the process with one clear line`, async (t) => {
    const { exited } = start(env)
    const { code, stderr } = await exited
    t.not(code, 0)
    const lines = stderr.trim().split('\n')
    t.equal(lines.length, 1, stderr)
    t.match(lines[0], /^tandem: /)
    t.match(lines[0], message)
  })
}

t.test('a good configuration listens, answers, and exits 0 on SIGTERM', async (t) => {
  const port = await freePort()
  const { child, exited } = start({ PORT: String(port), JWT_SECRET: 'a-secret-long-enough-for-tests' })
  let res: Response | undefined
  for (let attempt = 0; attempt < 100 && res === undefined; attempt++) {
    res = await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined)
    if (res === undefined) await new Promise((resolve) => setTimeout(resolve, 200))
  }
  t.equal(res?.status, 200)
  const users = await fetch(`http://127.0.0.1:${port}/api/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'A', email: 'spawned@example.com' }) })
  t.equal(users.status, 201)
  child.kill('SIGTERM')
  const { code } = await exited
  t.equal(code, 0)
})

t.test('environment names derive from option names', async (t) => {
  t.equal(envName('rateLimitMax'), 'RATE_LIMIT_MAX')
  t.equal(envName('graphqlMaxDepth'), 'GRAPHQL_MAX_DEPTH')
  t.equal(envName('port'), 'PORT')
  const defaults = validateOptions({})
  t.equal(defaults.port, 3000)
  t.equal(defaults.host, '127.0.0.1')
  t.equal(defaults.jwtExpiresIn, '15m')
  t.equal(defaults.rateLimitMax, 1000)
  t.equal(defaults.rateLimitWindow, '1 minute')
  t.equal(defaults.graphqlMaxDepth, 8)
  t.equal(defaults.graphqlMaxComplexity, 10000)
  t.throws(() => validateOptions({ rateLimitMax: 0 }), /rateLimitMax must be >= 1/)
  t.throws(() => validateOptions({ unknownOption: 1 }), /unknownOption/)
})
