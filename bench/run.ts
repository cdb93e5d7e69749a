// npm run bench [-- --quick] [--keep-db] [--only id,id] [--passes N] [--seconds N] [--connections N]
//                 [--no-build] [--profile] [--out DIR]
// Measures the API (one production process) and a node:http + pg baseline on the same data set.
// BENCHMARKS.md says what each case does and how to read the numbers.
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { connect, type Db } from '../db/connect.js'
import { cases, type BenchCase, type CaseContext } from './cases.js'
import { deepCursor, login, productsCursor, secondCursor } from './context.js'
import { benchProductIds, prepareData } from './data.js'
import { backgroundRate, combineRuns, measure, medianPass, type CaseResult, type Tools } from './measure.js'
import { openServer, withDatabase, type PgServer } from './postgres.js'
import { formatSummary, summarize, type ProfileSummary } from './profile.js'
import { openReplica, poolReads, replicaUp, type Replica } from './replica.js'
import { passSchedule } from './schedule.js'
import { evaluateControls, evaluateTargets, markdown, ratiosToBaseline, save, type NotRun, type Report } from './report.js'
import { apiEntryPoint, benchResourcesModule, startApi, startBaseline, startFloor, type Server } from './servers.js'
import { ADMIN, FULL, QUICK, type Settings } from './settings.js'
import { StatementCounter } from './statements.js'
import { describeMachine, postmasterOf } from './system.js'

const log = (line: string) => { process.stdout.write(`[bench] ${line}\n`) }

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    'keep-db': { type: 'boolean', default: false },
    only: { type: 'string' },
    passes: { type: 'string' },
    seconds: { type: 'string' },
    connections: { type: 'string' },
    'no-build': { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    out: { type: 'string' }
  }
})

function positive (name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive integer, got '${raw}'`)
  return value
}

const base = flags.quick === true ? QUICK : FULL
const settings: Settings = {
  ...base,
  passes: positive('passes', flags.passes, base.passes),
  seconds: positive('seconds', flags.seconds, base.seconds),
  connections: positive('connections', flags.connections, base.connections)
}
const only = flags.only?.split(',').map((id) => id.trim()).filter((id) => id !== '')
const unknown = only?.filter((id) => !cases.some((c) => c.id === id)) ?? []
if (unknown.length > 0) throw new Error(`unknown case ${unknown.join(', ')}; cases: ${cases.map((c) => c.id).join(', ')}`)
// A full run of every case leaves out those that would not fit its 10 minutes (the bulk writes'): --only runs them.
const selected = cases.filter((c) => only === undefined ? settings.mode === 'quick' || c.inFullRun !== false : only.includes(c.id))
// Quick runs only prove the harness works: their results stay out of the repository.
const outDir = flags.out ?? (settings.mode === 'quick' ? join(tmpdir(), 'tandem-bench') : new URL('./results/', import.meta.url).pathname)
const logDir = join(tmpdir(), 'tandem-bench')
mkdirSync(logDir, { recursive: true })
const profileDir = join(logDir, `profile-${Date.now()}`)

function describe (result: CaseResult): string {
  const sql = result.sqlPerRequest === null ? '' : `, ${result.sqlPerRequest} SQL/req`
  const failures = result.non2xx + result.errors + result.badBodies
  const rows = result.rowsPerSec === undefined ? '' : ` (${result.rowsPerSec} rows/s)`
  return `${result.id}: ${result.reqPerSec} req/s${rows}, p50 ${result.latencyMs.p50} ms, p99 ${result.latencyMs.p99} ms${sql}, ` +
    `CPU/req ${result.cpuUsPerRequest.server} µs server + ${result.cpuUsPerRequest.postgres} µs PostgreSQL, ` +
    `RSS ${result.serverRss.peakMiB ?? '?'} MiB, ${failures} failed, other load ${result.cpu.other} cores` +
    (result.stock === undefined ? '' : `, stock ${result.stock.conserved ? 'conserved' : 'NOT conserved'}`) +
    (result.firstBadBody === undefined ? '' : `\n  first bad body: ${result.firstBadBody}`)
}

// The API's tokens are also checked by the reference Fastify server's `/auth/users`.
const jwtSecret = randomBytes(32).toString('base64url')

/** The API's environment: production, the bench's administrator, limits out of the way. */
async function apiEnv (datasetUrl: string, entry: string[]): Promise<Record<string, string>> {
  return {
    NODE_ENV: 'production',
    DATABASE_URL: datasetUrl,
    JWT_SECRET: jwtSecret,
    JWT_EXPIRES_IN: '1d',
    ADMIN_EMAIL: ADMIN.email,
    ADMIN_PASSWORD: ADMIN.password,
    RATE_LIMIT_MAX: '1000000000',
    RESOURCES_MODULE: await benchResourcesModule(entry),
    LOG_LEVEL: 'warn'
  }
}

async function startServers (datasetUrl: string, entry: () => Promise<string[]>): Promise<Servers> {
  const servers: Servers = {}
  if (selected.some((c) => c.server === 'baseline')) {
    servers.baseline = await startBaseline(datasetUrl, 20, join(logDir, 'baseline.log'))
  }
  if (selected.some((c) => c.server === 'floor')) {
    servers.floor = await startFloor(datasetUrl, jwtSecret, 20, join(logDir, 'floor.log'))
  }
  // The reference server's `/auth/users` and `/limited/users` check the API's own token; the replica's API takes it too.
  if (selected.some((c) => c.server === 'api' || c.server === 'api-replica' || c.id === 'floor-first-page-jwt' || c.id === 'floor-first-page-limited')) {
    const profiling = flags.profile === true ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []
    const args = await entry()
    servers.api = await startApi([...profiling, ...args], await apiEnv(datasetUrl, args), join(logDir, 'api.log'))
    log(`API: ${servers.api.command} (pid ${servers.api.pid}) on ${servers.api.origin}`)
  }
  return servers
}

/**
 * A second API like the first, its reads on a streaming replica of the data set's server, made
 * for this run; or why it cannot run here. Started once the data set is there (the replica copies it).
 */
async function startReplicaApi (serverUrl: string, datasetUrl: string, entry: () => Promise<string[]>): Promise<{ server: Server } | { notRun: string }> {
  const made = await openReplica(serverUrl, log)
  if ('notMade' in made) return { notRun: made.notMade }
  replica = made.replica
  const args = await entry()
  const server = await startApi(args, { ...await apiEnv(datasetUrl, args), DATABASE_READ_URLS: withDatabase(replica.url, settings.database) }, join(logDir, 'api-replica.log'), 'api-replica')
  servers['api-replica'] = server
  log(`API reading from the replica: ${server.command} (pid ${server.pid}) on ${server.origin}`)
  if (!await replicaUp(server.origin)) return { notRun: 'the API never found the replica up (within DATABASE_READ_MAX_LAG of the primary) in 60 s' }
  return { server }
}

function readProfile (): ProfileSummary | undefined {
  if (flags.profile !== true) return undefined
  const [file] = (existsSync(profileDir) ? readdirSync(profileDir) : []).filter((name) => name.endsWith('.cpuprofile'))
  if (file === undefined) {
    log(`no CPU profile was written to ${profileDir}`)
    return undefined
  }
  const profile = summarize(join(profileDir, file))
  log(`CPU profile of the API (${join(profileDir, file)}):\n${formatSummary(profile)}`)
  return profile
}

let pgServer: PgServer | undefined
let replica: Replica | undefined
let statements: StatementCounter | undefined
let replicaStatements: StatementCounter | undefined
let db: Db | undefined
type Servers = Partial<Record<BenchCase['server'], Server>>
let servers: Servers = {}
let failed = false
try {
  const machine = describeMachine()
  log(`${settings.mode} run on ${machine.cpus} cores, load average ${machine.loadAverage.join(' ')}`)
  const databaseUrl = process.env.DATABASE_URL === '' ? undefined : process.env.DATABASE_URL
  pgServer = await openServer(databaseUrl, flags['keep-db'] === true, log)
  const dataset = await prepareData(pgServer.url, settings, log)
  statements = await StatementCounter.open(dataset.url)
  if (!statements.available) log('pg_stat_statements is not loaded on this server: SQL statements per request are not counted')
  db = await connect({ databaseUrl: dataset.url, poolSize: 2 })
  let built: Promise<string[]> | undefined
  const entry = async () => await (built ??= apiEntryPoint(flags['no-build'] !== true, log))
  servers = await startServers(dataset.url, entry)
  const notRun: NotRun[] = []
  if (selected.some((c) => c.server === 'api-replica')) {
    const started = await startReplicaApi(pgServer.url, dataset.url, entry)
    if ('notRun' in started) {
      for (const bench of selected.filter((c) => c.server === 'api-replica')) notRun.push({ id: bench.id, reason: started.notRun })
      log(`NOT RUN: ${notRun.map(({ id }) => id).join(', ')}: ${started.notRun}`)
    } else {
      // Its SQL and PostgreSQL's CPU are the replica's: pg_stat_statements and the postmaster there.
      replicaStatements = await StatementCounter.open(withDatabase(replica?.url ?? '', settings.database))
    }
  }
  const measured = selected.filter((c) => !notRun.some(({ id }) => id === c.id))

  const context: CaseContext = { token: '', deepCursor: '', secondCursor: '', productsCursor: '', productIds: await benchProductIds(db), deepOffset: settings.deepOffset }
  let walk = { pages: 0, ms: 0 }
  if (servers.api !== undefined) {
    context.token = await login(servers.api.origin)
    const deep = await deepCursor(servers.api.origin, context.token, dataset.counts.users)
    walk = { pages: deep.pages, ms: deep.ms }
    log(`deep cursor: walked ${deep.pages} pages of 100 in ${deep.ms} ms`)
    context.deepCursor = deep.cursor
    context.secondCursor = await secondCursor(servers.api.origin, context.token)
    context.productsCursor = await productsCursor(servers.api.origin)
  }
  const replicaApi = replicaStatements === undefined ? undefined : servers['api-replica']
  // The same walk warms the second API as the first's warmed it, on the replica's rows.
  if (replicaApi !== undefined) log(`deep cursor on the replica's API: ${(await deepCursor(replicaApi.origin, context.token, dataset.counts.users)).ms} ms`)
  const [background, replicaBackground] = await Promise.all([backgroundRate(statements), replicaStatements === undefined ? 0 : backgroundRate(replicaStatements)])
  const tools: Tools = { settings, db, statements, postmaster: postmasterOf(await statements.backendPid()), background }
  log(`idle servers run ${tools.background} statements/s (subtracted from SQL per request)`)
  const replicaTools: Tools | undefined = replicaStatements === undefined
    ? undefined
    : { ...tools, statements: replicaStatements, postmaster: postmasterOf(await replicaStatements.backendPid()), background: replicaBackground }

  const passes = new Map<string, CaseResult[]>()
  const schedule = passSchedule(measured)
  for (let pass = 1; pass <= settings.passes; pass++) {
    const runs = new Map<string, CaseResult[]>()
    for (const bench of schedule) {
      const server = servers[bench.server] as Server
      const run = (runs.get(bench.id)?.length ?? 0) + 1
      const of = schedule.filter((c) => c === bench).length
      log(`${bench.id} (pass ${pass}/${settings.passes}${of > 1 ? `, run ${run}/${of}` : ''}): ` +
        `${settings.warmupSeconds} s warm-up + ${settings.seconds} s, ${settings.connections} connections`)
      const onReplica = bench.server === 'api-replica'
      const before = onReplica ? await poolReads(server.origin) : undefined
      const result = await measure(bench, server, context, onReplica ? replicaTools ?? tools : tools, pass === 1)
      if (before !== undefined) {
        const after = await poolReads(server.origin)
        result.routed = { replica: after.replica - before.replica, primary: after.primary - before.primary }
      }
      runs.set(bench.id, [...runs.get(bench.id) ?? [], result])
      log(describe(result))
    }
    for (const bench of measured) passes.set(bench.id, [...passes.get(bench.id) ?? [], combineRuns(runs.get(bench.id) ?? [])])
  }
  for (const server of Object.values(servers)) await server.stop()
  const results = measured.map((bench) => medianPass(passes.get(bench.id) ?? []))
  const profile = readProfile()
  const wallSeconds = Math.round(process.uptime())

  const report: Report = {
    date: new Date().toISOString(),
    mode: settings.mode,
    machine,
    postgres: { version: await statements.serverVersion(), origin: pgServer.origin },
    api: { command: servers.api?.command ?? 'not started' },
    settings: {
      connections: settings.connections,
      seconds: settings.seconds,
      warmupSeconds: settings.warmupSeconds,
      passes: settings.passes,
      counts: settings.counts,
      benchProducts: settings.benchProducts,
      deepOffset: settings.deepOffset
    },
    dataset: { seededInMs: dataset.seededInMs },
    deepCursor: walk,
    backgroundStatementsPerSecond: tools.background,
    schedule: schedule.map((bench) => bench.id),
    cases: results,
    ratioToBaseline: ratiosToBaseline(results),
    wallSeconds,
    // Only a full run of every case is judged on its time: a quick run or a subset measures less.
    targets: evaluateTargets(results, settings.mode === 'full' && only === undefined ? { wallSeconds } : undefined, notRun),
    controls: evaluateControls(results),
    notRun,
    ...(profile === undefined ? {} : { profile })
  }
  const file = save(report, outDir)
  process.stdout.write('\n' + markdown(report) + '\n')
  log(`results: ${file}`)
  // Correctness, never speed, decides the exit code: every answer healthy, every unit of stock accounted for.
  const broken = results.filter((r) => r.requests === 0 || r.non2xx + r.errors + r.badBodies > 0 || r.stock?.conserved === false)
  if (broken.length > 0) {
    failed = true
    log(`FAILED: ${broken.map((r) => r.id).join(', ')} had failed requests, no requests, or unconserved stock`)
  }
} catch (error) {
  failed = true
  process.stderr.write(`[bench] ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
} finally {
  for (const server of Object.values(servers)) await server.stop().catch(() => {})
  await statements?.close().catch(() => {})
  await replicaStatements?.close().catch(() => {})
  await replica?.stop().catch((error: unknown) => { log(`could not remove the replica: ${String(error)}`) })
  await db?.destroy().catch(() => {})
  await pgServer?.stop().catch((error: unknown) => { log(`could not stop PostgreSQL: ${String(error)}`) })
}
process.exitCode = failed ? 1 : 0
