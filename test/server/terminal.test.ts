// `npm start` at a terminal that goes away (an SSH session that drops): the server runs on a
// pseudo-terminal of `script`, which is then killed, so that the terminal hangs up under it.
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { stripVTControlCharacters } from 'node:util'
import t, { type Test } from 'tap'
import { migratedDataDir } from '../helpers/database.js'
import { root } from '../helpers/root.js'

const skip = process.platform !== 'linux'
  ? 'reads the server\'s CPU time in /proc: Linux only'
  : spawnSync('script', ['--version']).status !== 0
    ? 'needs `script` (util-linux; the bsdutils package on Debian) to run the server on a pseudo-terminal'
    : false

/** Clock ticks per second of /proc's CPU times: USER_HZ, which Linux fixes at 100 for user space. */
const TICKS_PER_SECOND = 100

/** Field 3 and on of /proc/PID/stat (after the command's name, which may hold spaces), or undefined once the process is reaped. */
function statFields (pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return text.slice(text.lastIndexOf(')') + 2).split(' ')
  } catch {
    return undefined
  }
}

const parentOf = (pid: number): number | undefined => {
  const fields = statFields(pid)
  return fields === undefined ? undefined : Number(fields[1])
}

/** User and system CPU time of `pid` so far, in ticks. */
const cpuTicks = (pid: number): number | undefined => {
  const fields = statFields(pid)
  return fields === undefined ? undefined : Number(fields[11]) + Number(fields[12])
}

/** Running, not a zombie waiting to be reaped. */
const alive = (pid: number): boolean => {
  const state = statFields(pid)?.[0]
  return state !== undefined && state !== 'Z' && state !== 'X'
}

function descendants (pid: number): number[] {
  const all = readdirSync('/proc').filter((name) => /^[0-9]+$/.test(name)).map(Number)
  const children = all.filter((other) => parentOf(other) === pid)
  return [...children, ...children.flatMap(descendants)]
}

const commandLine = (pid: number): string => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
  } catch {
    return ''
  }
}

/** Share of one core `pid` used over `ms` (0 if it ended at once); a spinning loop uses about 1. */
async function cpuShare (pid: number, ms: number): Promise<number> {
  const first = cpuTicks(pid)
  if (first === undefined) return 0
  const started = Date.now()
  let last = first
  while (Date.now() - started < ms) {
    await sleep(100)
    last = cpuTicks(pid) ?? last
  }
  return (last - first) / TICKS_PER_SECOND / ((Date.now() - started) / 1000)
}

async function endsWithin (pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (alive(pid)) {
    if (Date.now() > deadline) return false
    await sleep(100)
  }
  return true
}

interface OnTerminal {
  /** The server's process (not `script`'s child when a shell runs it). */
  server: number
  url: string
  /** Closes the terminal: `script` dies, and with it the pseudo-terminal's master side. */
  hangUp: () => void
}

/**
 * Runs `command` (a shell command that starts scripts/start.mjs) on a pseudo-terminal of `script`,
 * waits until the server listens, and kills every process of it when the test ends, whatever happened.
 */
async function onTerminal (t: Test, command: string): Promise<OnTerminal> {
  // Without the module loader that tap's process tracking adds to every child's NODE_OPTIONS (see spawnServer).
  const script = spawn('script', ['-qfc', `unset NODE_OPTIONS; ${command}`, '/dev/null'], {
    cwd: root,
    // A migrated data directory: an empty one would cost an initdb and the migrations.
    env: { PATH: process.env.PATH ?? '', SHELL: '/bin/sh', TZ: 'UTC', DATA_DIR: await migratedDataDir(t), PORT: '0', JWT_SECRET: 'a-secret-of-sixteen-chars' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const pids = new Set<number>()
  t.teardown(() => {
    for (const pid of [...pids, ...(script.pid === undefined ? [] : descendants(script.pid))]) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {}
    }
    script.kill('SIGKILL')
  })
  let output = ''
  script.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  script.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const deadline = Date.now() + 90_000
  let url: string | undefined
  let server: number | undefined
  while (url === undefined || server === undefined) {
    if (script.exitCode !== null || Date.now() > deadline) throw new Error(`the server did not start on the terminal: ${output}`)
    await sleep(100)
    // pino-pretty's line, in colours: the terminal's.
    url = /listening at (http:\/\/127\.0\.0\.1:[0-9]+)/.exec(stripVTControlCharacters(output))?.[1]
    const tree = script.pid === undefined ? [] : descendants(script.pid)
    for (const pid of tree) pids.add(pid)
    server = tree.find((pid) => /^\S*node scripts\/start\.mjs/.test(commandLine(pid)))
  }
  return { server, url, hangUp: () => { script.kill('SIGKILL') } }
}

t.test('regression: a server whose terminal hung up spun a core on a fault loop, deaf to SIGTERM; now it closes on the hang-up', { skip }, async (t) => {
  // The server is the terminal's session leader: the kernel sends it SIGHUP as the terminal goes.
  const { server, hangUp } = await onTerminal(t, 'exec node scripts/start.mjs')
  hangUp()
  const share = await cpuShare(server, 2000)
  t.ok(share < 0.5, `no spinning loop: ${Math.round(share * 100)} % of a core after the hang-up`)
  const closed = await endsWithin(server, 15_000)
  t.ok(closed, 'it closes, as on SIGTERM')
  if (!closed) {
    const later = await cpuShare(server, 2000)
    t.ok(later < 0.5, `no spinning loop later either: ${Math.round(later * 100)} % of a core`)
    process.kill(server, 'SIGTERM')
    t.ok(await endsWithin(server, 5000), 'SIGTERM ends it')
  }
})

t.test('a server whose terminal went away without a SIGHUP goes on serving, its log going nowhere, and ends on SIGTERM with 0', { skip }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'tandem-terminal-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const status = join(dir, 'status')
  // A shell in between that ignores SIGHUP, and so does not end and pass it on: the server learns
  // of the hang-up only from its terminal. The shell writes the server's exit code.
  const { server, url, hangUp } = await onTerminal(t, `trap '' HUP; node scripts/start.mjs; echo $? > ${status}`)
  hangUp()
  await sleep(1500)
  for (let i = 0; i < 3; i++) {
    const answer = await fetch(`${url}/health`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined)
    t.equal(answer?.status, 200, 'answers, and logs the request')
  }
  t.same([1, 2].map((fd) => readlinkSync(`/proc/${server}/fd/${fd}`)), ['/dev/null', '/dev/null'], 'its log goes nowhere')
  const share = await cpuShare(server, 2000)
  t.ok(share < 0.5, `no spinning loop: ${Math.round(share * 100)} % of a core`)
  process.kill(server, 'SIGTERM')
  t.ok(await endsWithin(server, 15_000), 'SIGTERM ends it')
  const deadline = Date.now() + 5000
  let code = ''
  while (code === '' && Date.now() < deadline) {
    await sleep(100)
    code = await readFile(status, 'utf8').then((text) => text.trim(), () => '')
  }
  t.equal(code, '0', 'a graceful close: exit code 0')
})
