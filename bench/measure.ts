import type autocannon from 'autocannon'
import type { Db } from '../db/connect.js'
import type { BenchCase, CaseContext } from './cases.js'
import { checkStock, markStock, type StockCheck } from './data.js'
import { fire, responses, type Fired, type Load } from './load.js'
import type { Server } from './servers.js'
import type { Settings } from './settings.js'
import type { Executed, StatementCounter } from './statements.js'
import { cpuBetween, sampleCpu, watchRss, type CpuShare, type Rss } from './system.js'

export interface CaseResult {
  id: string
  title: string
  server: BenchCase['server']
  seconds: number
  connections: number
  requests: number
  reqPerSec: number
  latencyMs: { p50: number, p99: number, max: number }
  non2xx: number
  /** Connection errors and timeouts. */
  errors: number
  /** Responses whose body carried `"error"`/`"errors"` (GraphQL answers those with 200). */
  badBodies: number
  firstBadBody?: string
  /** Statements PostgreSQL executed per request (pg_stat_statements, over a counted run); null when unavailable. */
  sqlPerRequest: number | null
  /** Milliseconds PostgreSQL spent executing those statements, per request (planning not included). */
  sqlMsPerRequest: number | null
  /** CPU time per request, in microseconds: the server's process, and PostgreSQL's processes. */
  cpuUsPerRequest: { server: number, postgres: number }
  serverRss: Rss
  /** Cores kept busy during the measured run, by whom. */
  cpu: CpuShare
  /** For the cases that create rows (`rows` of the case): rows created per second, req/s × rows per request. */
  rowsPerSec?: number
  /** For the write cases, over all runs of the case; `created` counts the 201 answers. */
  stock?: StockCheck & { created: number }
  /** With several passes: the req/s of each; the other figures are those of the median pass. */
  passes?: number[]
  /** The req/s of every run, by pass: cases measured twice in a pass (bench/schedule.ts) have two. */
  runs?: number[][]
  /** On `api-replica`: the reads its pools served over all runs of the case (its `/ready`), replicas and primary. */
  routed?: Routed
}

export interface Routed { replica: number, primary: number }

/** Routed reads of several runs, summed; undefined when none was counted. */
export function sumRouted (results: readonly CaseResult[]): Routed | undefined {
  const counted = results.flatMap((r) => r.routed ?? [])
  return counted.length === 0 ? undefined : { replica: counted.reduce((n, r) => n + r.replica, 0), primary: counted.reduce((n, r) => n + r.primary, 0) }
}

export interface Tools {
  settings: Settings
  db: Db
  statements: StatementCounter
  postmaster: number | undefined
  /** Statements per second the servers run while idle, subtracted from the counts (0 unless something polls). */
  background: number
}

const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits
const sleep = async (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

interface Mark { at: number, executed: Executed | undefined }

/**
 * Waits until the database has been idle for 300 ms (at most 10 s): requests cut off when autocannon
 * stops still run on the server, and their statements belong to the run that sent them.
 */
async function quiet (statements: StatementCounter): Promise<Mark> {
  let last = await statements.total()
  if (last === undefined) {
    await sleep(1000)
    return { at: performance.now(), executed: undefined }
  }
  for (let waited = 0; waited < 10_000; waited += 300) {
    await sleep(300)
    const now = await statements.total()
    if (now === undefined || now.calls === last.calls) return { at: performance.now(), executed: now }
    last = now
  }
  return { at: performance.now(), executed: last }
}

/** Statements per second while nothing is asked of the servers. */
export async function backgroundRate (statements: StatementCounter, seconds = 3): Promise<number> {
  const before = await statements.total()
  await sleep(seconds * 1000)
  const after = await statements.total()
  return before === undefined || after === undefined ? 0 : round((after.calls - before.calls) / seconds)
}

interface Counted {
  /** Responses to the counted requests (their failures count as the run's). */
  fired: Fired | undefined
  executed: Executed | undefined
  answered: number
}

/**
 * Statements are counted apart, over a fixed number of requests that all get their answer: a timed
 * run cuts requests off when it stops, some of which the server has already started, some not.
 */
async function countStatements (load: Load, tools: Tools): Promise<Counted> {
  const before = await quiet(tools.statements)
  // Whole cycles of the case's requests on every connection (autocannon shares `amount` out evenly).
  const cycles = Math.ceil(Math.max(4, 100 / load.connections) / load.requests.length)
  const fired = await fire({ ...load, amount: load.connections * load.requests.length * cycles })
  const after = await quiet(tools.statements)
  const answered = responses(fired.result)
  const executed = before.executed === undefined || after.executed === undefined || answered === 0
    ? undefined
    : {
        calls: after.executed.calls - before.executed.calls - tools.background * (after.at - before.at) / 1000,
        ms: after.executed.ms - before.executed.ms
      }
  return { fired, executed, answered }
}

/**
 * Warms up, then measures one case against `server`: throughput, latency, errors, CPU, memory, and,
 * when `counting` and the server has pg_stat_statements, the SQL statements per request (the same in
 * every pass, so a run counts them once).
 */
export async function measure (bench: BenchCase, server: Server, context: CaseContext, tools: Tools, counting: boolean): Promise<CaseResult> {
  const { settings } = tools
  const load = { origin: server.origin, requests: bench.requests(context), connections: settings.connections }
  const mark = bench.writes ? await markStock(tools.db) : undefined

  const warmup = await fire({ ...load, seconds: settings.warmupSeconds })

  const cpuBefore = sampleCpu()
  const rss = watchRss(server.pid)
  const { result, firstBadBody } = await fire({ ...load, seconds: settings.seconds })
  const serverRss = rss.stop()
  const cpu = cpuBetween(cpuBefore, sampleCpu(), { server: server.pid, postmaster: tools.postmaster })

  const { fired: counted, executed, answered } = counting && tools.statements.available
    ? await countStatements(load, tools)
    : { fired: undefined, executed: undefined, answered: 0 }
  const fired = [warmup, { result, firstBadBody }, ...counted === undefined ? [] : [counted]]
  const sum = (pick: (r: autocannon.Result) => number) => fired.reduce((n, f) => n + pick(f.result), 0)
  const reqPerSec = round(result.requests.average, 0)
  const perRequest = (cores: number) => reqPerSec === 0 ? 0 : Math.round(cores / reqPerSec * 1e6)
  const caseResult: CaseResult = {
    id: bench.id,
    title: bench.title,
    server: bench.server,
    seconds: result.duration,
    connections: result.connections,
    requests: responses(result),
    reqPerSec,
    latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    badBodies: sum((r) => r.mismatches),
    sqlPerRequest: executed === undefined ? null : round(executed.calls / answered),
    sqlMsPerRequest: executed === undefined ? null : round(executed.ms / answered, 3),
    cpuUsPerRequest: { server: perRequest(cpu.server), postgres: perRequest(cpu.postgres) },
    serverRss,
    cpu
  }
  const bad = fired.find((f) => f.firstBadBody !== undefined)?.firstBadBody
  if (bad !== undefined) caseResult.firstBadBody = bad
  if (bench.rows !== undefined) caseResult.rowsPerSec = reqPerSec * bench.rows
  if (mark !== undefined) {
    caseResult.stock = { ...await checkStock(tools.db, mark), created: sum((r) => r.statusCodeStats?.['201']?.count ?? 0) }
  }
  return caseResult
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length

/**
 * One pass's result of a case run several times in it (the mirrored cases): req/s, CPU and SQL per
 * request over all the runs, failures summed, the highest RSS. autocannon reports percentiles, not
 * histograms, so the latencies are the runs' mean percentiles: close, not exact.
 */
export function combineRuns (runs: CaseResult[]): CaseResult {
  const [first] = runs
  if (first === undefined) throw new Error('no runs to combine')
  if (runs.length === 1) return first
  if (runs.some((r) => r.stock !== undefined)) throw new Error(`${first.id} writes: its runs cannot be combined`)
  const sum = (pick: (r: CaseResult) => number) => runs.reduce((n, r) => n + pick(r), 0)
  const each = (pick: (r: CaseResult) => number) => runs.map(pick)
  // Runs last equally long, so the mean rate is the rate over all of them, and CPU per request is
  // weighted by each run's requests.
  const rate = sum((r) => r.reqPerSec)
  const perRequest = (pick: (r: CaseResult) => number) => rate === 0 ? 0 : Math.round(sum((r) => pick(r) * r.reqPerSec) / rate)
  const sql = (pick: (r: CaseResult) => number | null, digits: number) => {
    const values = runs.map(pick)
    return values.some((v) => v === null) ? null : round(mean(values as number[]), digits)
  }
  const known = (values: Array<number | null>) => values.filter((v): v is number => v !== null)
  const peaks = known(runs.map((r) => r.serverRss.peakMiB))
  const means = known(runs.map((r) => r.serverRss.meanMiB))
  const result: CaseResult = {
    ...first,
    seconds: sum((r) => r.seconds),
    requests: sum((r) => r.requests),
    reqPerSec: Math.round(rate / runs.length),
    latencyMs: { p50: round(mean(each((r) => r.latencyMs.p50))), p99: round(mean(each((r) => r.latencyMs.p99))), max: Math.max(...each((r) => r.latencyMs.max)) },
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    badBodies: sum((r) => r.badBodies),
    sqlPerRequest: sql((r) => r.sqlPerRequest, 2),
    sqlMsPerRequest: sql((r) => r.sqlMsPerRequest, 3),
    cpuUsPerRequest: { server: perRequest((r) => r.cpuUsPerRequest.server), postgres: perRequest((r) => r.cpuUsPerRequest.postgres) },
    serverRss: { peakMiB: peaks.length === 0 ? null : Math.max(...peaks), meanMiB: means.length === 0 ? null : Math.round(mean(means)) },
    cpu: {
      server: round(mean(each((r) => r.cpu.server))),
      postgres: round(mean(each((r) => r.cpu.postgres))),
      loadGenerator: round(mean(each((r) => r.cpu.loadGenerator))),
      other: round(mean(each((r) => r.cpu.other)))
    },
    runs: [each((r) => r.reqPerSec)]
  }
  const routed = sumRouted(runs)
  if (routed !== undefined) result.routed = routed
  const bad = runs.find((r) => r.firstBadBody !== undefined)?.firstBadBody
  if (bad === undefined) delete result.firstBadBody
  else result.firstBadBody = bad
  return result
}

/**
 * One result for a case measured in several passes: the pass with the median req/s, so that its
 * latency, CPU and memory figures come from one and the same run, with every pass's req/s and every
 * pass's failures kept. SQL per request comes from the pass that counted it (the first).
 */
export function medianPass (results: CaseResult[]): CaseResult {
  const sorted = [...results].sort((a, b) => a.reqPerSec - b.reqPerSec)
  const median = sorted[Math.floor((sorted.length - 1) / 2)] as CaseResult
  if (results.length === 1) return median
  const sum = (pick: (r: CaseResult) => number) => results.reduce((n, r) => n + pick(r), 0)
  return {
    ...median,
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    badBodies: sum((r) => r.badBodies),
    sqlPerRequest: results.find((r) => r.sqlPerRequest !== null)?.sqlPerRequest ?? null,
    sqlMsPerRequest: results.find((r) => r.sqlMsPerRequest !== null)?.sqlMsPerRequest ?? null,
    passes: results.map((r) => r.reqPerSec),
    runs: results.flatMap((r) => r.runs ?? [[r.reqPerSec]]),
    ...(sumRouted(results) === undefined ? {} : { routed: sumRouted(results) }),
    ...(median.firstBadBody === undefined && results.some((r) => r.firstBadBody !== undefined) ? { firstBadBody: results.find((r) => r.firstBadBody !== undefined)?.firstBadBody } : {}),
    ...(results.every((r) => r.stock === undefined || r.stock.conserved) ? {} : { stock: results.find((r) => r.stock?.conserved === false)?.stock })
  }
}
