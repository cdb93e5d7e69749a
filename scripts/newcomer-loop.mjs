// `npm run loop`: the development loop as a newcomer meets it, measured. A fresh clone of this
// checkout's commit in a new temporary folder, `npm ci` there, then `npm start` until `/health`
// answers (a first start on no data, then a start on the data it left) and `npm test`, each timed
// from the command to its end, with every cache the tests or the server keep outside the clone
// (TMPDIR, XDG_CACHE_HOME) pointed into that new folder: nothing from an earlier run helps. npm's
// own download cache is the user's, as a newcomer's `npm ci` fills it (`--fresh-npm-cache` empties
// that too). It reports times, never judges them; it fails when something fails: a test, a start,
// the clone, a skipped test that does not say why.
//
//   npm run loop                          everything, in a temporary folder removed afterwards
//   npm run loop -- --no-test             the two start figures only
//   npm run loop -- --tap-log F --tap-seconds S
//                                         the test figure from a suite already run (.ci/run's own)
//   other options: --source DIR (the checkout to clone; this one), --starts N (each start N times;
//   3), --node-modules DIR (linked into the clone instead of `npm ci`), --fresh-npm-cache, --keep
import { execFileSync, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'

const usage = 'usage: npm run loop -- [--no-test] [--tap-log FILE --tap-seconds S] [--source DIR] [--starts N] [--node-modules DIR] [--fresh-npm-cache] [--keep]'
const parsed = (() => {
  try {
    return parseArgs({ options: optionsSpec() })
  } catch (error) {
    process.stderr.write(`${error.message}\n${usage}\n`)
    process.exit(2)
  }
})()
const options = parsed.values

function optionsSpec () {
  return {
    source: { type: 'string', default: fileURLToPath(new URL('..', import.meta.url)) },
    starts: { type: 'string', default: '3' },
    'no-test': { type: 'boolean', default: false },
    'tap-log': { type: 'string' },
    'tap-seconds': { type: 'string' },
    'node-modules': { type: 'string' },
    'fresh-npm-cache': { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false }
  }
}
const starts = Number(options.starts)
if (!Number.isInteger(starts) || starts < 1) {
  process.stderr.write(`--starts takes a whole number from 1\n${usage}\n`)
  process.exit(2)
}

// A shell of a newcomer: their PATH (without the node_modules/.bin folders `npm run` put in front),
// locale and proxies; none of this project's settings (DATABASE_URL, REDIS_URL_TEST, NODE_ENV,
// NODE_OPTIONS, TZ…), which would change what runs.
const kept = /^(PATH|HOME|USER|LOGNAME|SHELL|LANG|LANGUAGE|LC_\w+|(HTTPS?|NO|ALL)_PROXY|NODE_EXTRA_CA_CERTS|SSL_CERT_(FILE|DIR))$/i
const work = mkdtempSync(join(tmpdir(), 'tandem-loop-'))
const clone = join(work, 'clone')
const env = {
  ...Object.fromEntries(Object.entries(process.env).filter(([name]) => kept.test(name))),
  PATH: (process.env.PATH ?? '').split(':').filter((dir) => !/[/\\]node_modules[/\\](\.bin|@npmcli[/\\]run-script[/\\]lib[/\\]node-gyp-bin)$/.test(dir)).join(':'),
  TMPDIR: join(work, 'tmp'),
  XDG_CACHE_HOME: join(work, 'cache'),
  ...(options['fresh-npm-cache'] ? { npm_config_cache: join(work, 'npm-cache') } : {})
}
mkdirSync(env.TMPDIR)
mkdirSync(env.XDG_CACHE_HOME)

/**
 * CPU seconds of this process's children that have ended (and of theirs, each waited for), from
 * /proc/self/stat: what a command cost, whatever else the machine was running. Undefined off Linux.
 */
function childrenCpu () {
  try {
    // After the command's name, which may hold spaces, in parentheses: field 3 is the state; 16 and 17 cutime and cstime.
    const fields = readFileSync('/proc/self/stat', 'utf8').replace(/^.*\) /, '').split(' ')
    return (Number(fields[13]) + Number(fields[14])) / 100
  } catch {
    return undefined
  }
}

const children = new Set()
/** Runs `command` in the clone, its output into `log`; resolves with its exit code, seconds and CPU seconds. */
function run (command, args, log, extra = {}) {
  const started = performance.now()
  const cpu = childrenCpu()
  const child = spawn(command, args, { cwd: clone, env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  children.add(child)
  let output = ''
  const collect = (chunk) => { output += chunk }
  child.stdout.on('data', collect)
  child.stderr.on('data', collect)
  const exited = once(child, 'exit').then(([code, signal]) => {
    children.delete(child)
    if (log !== undefined) writeFileSync(join(work, log), output)
    const after = childrenCpu()
    return { code, signal, seconds: (performance.now() - started) / 1000, cpu: cpu === undefined || after === undefined ? undefined : after - cpu, output }
  })
  return { child, started, exited, output: () => output }
}

/** Ends a child's process group (npm and what it started): SIGTERM, then SIGKILL after 10 s. */
async function stop (child) {
  if (child.exitCode !== null || child.signalCode !== null) return
  const ended = once(child, 'exit')
  process.kill(-child.pid, 'SIGTERM')
  const timer = setTimeout(() => process.kill(-child.pid, 'SIGKILL'), 10_000)
  await ended
  clearTimeout(timer)
}

function freePort () {
  const server = createServer().listen(0, '127.0.0.1')
  return once(server, 'listening').then(() => {
    const { port } = server.address()
    server.close()
    return port
  })
}

/** `npm start` until `/health` answers 200: the seconds from the command, or why it did not. */
async function timedStart () {
  const port = await freePort()
  const server = run('npm', ['start'], undefined, { PORT: String(port) })
  const deadline = server.started + 120_000
  try {
    for (;;) {
      if (server.child.exitCode !== null) return { failed: `exited ${server.child.exitCode}: ${server.output().slice(-2000)}` }
      const status = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(2000) }).then((res) => res.status, () => 0)
      if (status === 200) return { seconds: (performance.now() - server.started) / 1000 }
      if (performance.now() > deadline) return { failed: `no answer from /health in 120 s: ${server.output().slice(-2000)}` }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  } finally {
    await stop(server.child)
  }
}

/** tap's last summary line, `# { total: T, pass: P, fail: F, skip: S, todo: T }`, as numbers (`todo`: tap's own count of tests marked todo). */
function tapSummary (log) {
  const line = log.replace(/\r/g, '').split('\n').filter((l) => /^# \{ *total: *\d+/.test(l)).at(-1)
  if (line === undefined) return undefined
  const field = (key) => Number(new RegExp(`[{,] *${key}: *(\\d+)`).exec(line)?.[1] ?? 0)
  return { pass: field('pass'), fail: field('fail'), skip: field('skip'), todo: field('todo') }
}

/** The slowest test files of a TAP log (its top-level `ok N - file # time=…`). */
function slowest (log, count) {
  return [...log.matchAll(/^(?:not )?ok \d+ - (\S+\.test\.ts)\b.*# time=([\d.]+)ms/gm)]
    .map((m) => ({ file: m[1], seconds: Number(m[2]) / 1000 }))
    .sort((a, b) => b.seconds - a.seconds)
    .slice(0, count)
}

const s = (seconds) => `${seconds.toFixed(1)} s`
const range = (list) => list.length === 1 ? s(list[0]) : `${s(Math.min(...list))}–${s(Math.max(...list))} (${list.map((x) => x.toFixed(1)).join(', ')})`
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ')
const rows = []
const failures = []

try {
  const source = resolve(options.source)
  const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: source, encoding: 'utf8' }).trim()
  const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: source, encoding: 'utf8' }).trim() !== ''
  console.log(`newcomer loop: a fresh clone of ${source} at ${commit}${dirty ? ' (its uncommitted changes are not in it)' : ''} in ${clone}`)
  console.log(`node ${process.version}, ${cpus().length} cores, load average ${load()} at the start`)
  execFileSync('git', ['clone', '--quiet', source, clone], { stdio: 'inherit' })

  if (options['node-modules'] !== undefined) {
    symlinkSync(resolve(options['node-modules']), join(clone, 'node_modules'), 'dir')
    rows.push(['`npm ci`', `not run: node_modules linked to ${options['node-modules']}`])
  } else {
    const ci = await run('npm', ['ci', '--no-audit', '--no-fund'], 'npm-ci.log').exited
    if (ci.code !== 0) throw new Error(`npm ci failed (exit ${ci.code}): ${ci.output.slice(-2000)}`)
    rows.push(['`npm ci`', s(ci.seconds)])
  }

  // The starts come first: the test suite's own server processes would otherwise have made the
  // transpiled build (.tandem/) that a first start makes.
  const first = []
  const again = []
  for (let i = 0; i < starts; i++) {
    rmSync(join(clone, '.data'), { recursive: true, force: true })
    rmSync(join(clone, '.tandem'), { recursive: true, force: true })
    const fresh = await timedStart()
    if ('failed' in fresh) failures.push(`first start: ${fresh.failed}`)
    else first.push(fresh.seconds)
    const existing = await timedStart()
    if ('failed' in existing) failures.push(`start on existing data: ${existing.failed}`)
    else again.push(existing.seconds)
  }
  rows.push(['`npm start`, first `/health` 200, first start (transpiling, initdb, migrations, demo data)', first.length > 0 ? range(first) : 'failed'])
  rows.push(['`npm start`, first `/health` 200, existing `./.data`', again.length > 0 ? range(again) : 'failed'])

  let test
  if (options['tap-log'] !== undefined) {
    const log = readFileSync(options['tap-log'], 'utf8')
    const seconds = Number(options['tap-seconds'])
    // Its failures were counted where it ran.
    test = { label: `tests (${options['tap-log']})`, log, seconds: options['tap-seconds'] !== '' && Number.isFinite(seconds) ? seconds : undefined, code: 0, reportOnly: true }
  } else if (!options['no-test']) {
    const load0 = load()
    const result = await run('npm', ['test'], 'npm-test.log').exited
    test = { label: '`npm test`', log: result.output, seconds: result.seconds, cpu: result.cpu, code: result.code, load: `load average ${load0} before, ${load()} after` }
  }
  if (test !== undefined) {
    const summary = tapSummary(test.log)
    const counts = summary === undefined ? 'no tap summary' : `${summary.pass} pass, ${summary.fail} fail, ${summary.skip} skip`
    const cpu = test.cpu === undefined ? '' : ` (${s(test.cpu)} of CPU)`
    rows.push([test.label, `${test.seconds === undefined ? '?' : s(test.seconds)}${cpu}: ${counts}`])
    const bare = test.log.split('\n').filter((line) => /# SKIP\s*$/.test(line))
    if (bare.length > 0) console.log(`skipped without saying why (every skip should give its reason):\n${bare.join('\n')}`)
    if (test.reportOnly !== true && (summary === undefined || summary.fail > 0 || test.code !== 0 || bare.length > 0)) {
      failures.push(`${test.label}: exit ${test.code}, ${counts}${bare.length > 0 ? `, ${bare.length} skipped without a reason` : ''}`)
    }
    const files = slowest(test.log, 5)
    if (files.length > 0) console.log(`slowest test files: ${files.map((f) => `${f.file} ${s(f.seconds)}`).join(', ')}${test.load === undefined ? '' : `; ${test.load}`}`)
  }
} catch (error) {
  failures.push(error instanceof Error ? error.message : String(error))
} finally {
  await Promise.all([...children].map(stop))
  if (options.keep) console.log(`kept: ${work} (logs: npm-ci.log, npm-test.log)`)
  else rmSync(work, { recursive: true, force: true })
}

console.log(`\n| what | measured on ${new Date().toISOString().slice(0, 10)} (load average ${load()} at the end) |\n|---|---|`)
for (const [what, figure] of rows) console.log(`| ${what} | ${figure} |`)
for (const failure of failures) console.error(`!! ${failure}`)
process.exitCode = failures.length > 0 ? 1 : 0
