import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BATCH } from './cases.js'
import type { CaseResult } from './measure.js'
import type { ProfileSummary } from './profile.js'
import type { Settings } from './settings.js'
import type { Machine } from './system.js'

export interface Target {
  name: string
  wanted: string
  measured: string
  met: boolean | null
}

/** A selected case that did not run, and why (never a silent skip). */
export interface NotRun {
  id: string
  reason: string
}

export interface Control {
  name: string
  measured: string
}

export interface Report {
  date: string
  mode: Settings['mode']
  machine: Machine
  postgres: { version: string, origin: string }
  api: { command: string }
  settings: Pick<Settings, 'connections' | 'seconds' | 'warmupSeconds' | 'passes' | 'counts' | 'benchProducts' | 'deepOffset'>
  dataset: { seededInMs: number | null }
  /** Seconds from the start of `npm run bench` to its report: seeding, the build and every pass. */
  wallSeconds: number
  /** How the deep cursor was obtained, in milliseconds and pages walked. */
  deepCursor: { pages: number, ms: number }
  /** Statements per second the idle servers ran (subtracted from each case's SQL per request). */
  backgroundStatementsPerSecond: number
  /** The case ids in the order one pass runs them (bench/schedule.ts): the mirrored ones twice. */
  schedule: string[]
  cases: CaseResult[]
  /** Requests per second of each REST read relative to the baseline. */
  ratioToBaseline: Record<string, number>
  targets: Target[]
  /** Ratios that explain a target, judged by nothing. */
  controls: Control[]
  /** Selected cases that could not run here, each with its reason. */
  notRun: NotRun[]
  /** With --profile: the API's CPU profile over all the cases it served. */
  profile?: ProfileSummary
}

const byId = (cases: CaseResult[], id: string) => cases.find((c) => c.id === id)
const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor((values.length - 1) / 2)] ?? 0

/**
 * How `a`'s req/s compares with `b`'s: with several passes, the median of the ratios within each
 * pass, since the two cases of one pass ran seconds apart, under the same conditions. Unrounded:
 * a target is judged on this, never on the rounded figure a table shows.
 */
function ratio (a: CaseResult | undefined, b: CaseResult | undefined): number | undefined {
  if (a === undefined || b === undefined) return undefined
  const pairs = (a.passes ?? [a.reqPerSec]).map((value, i) => [value, (b.passes ?? [b.reqPerSec])[i] ?? 0] as const)
  const ratios = pairs.filter(([, of]) => of > 0).map(([value, of]) => value / of)
  return ratios.length === 0 ? undefined : median(ratios)
}

/** How `a`'s rows/s compares with `b`'s: their req/s ratio, by the rows each request creates. */
function rowsRatio (a: CaseResult | undefined, b: CaseResult | undefined): number | undefined {
  const requests = ratio(a, b)
  if (requests === undefined || a?.rowsPerSec === undefined || b?.rowsPerSec === undefined || a.reqPerSec === 0 || b.reqPerSec === 0) return undefined
  return requests * (a.rowsPerSec / a.reqPerSec) / (b.rowsPerSec / b.reqPerSec)
}

const rounded = (value: number, digits: number) => Math.round(value * 10 ** digits) / 10 ** digits

export const REST_READS = ['floor-first-page', 'floor-first-page-jwt', 'floor-first-page-limited', 'rest-first-page', 'rest-first-page-replica', 'rest-declared-first-page', 'rest-deep-keyset', 'rest-second-page', 'rest-first-page-desc', 'rest-deep-offset', 'rest-products', 'rest-include-posts']

export function ratiosToBaseline (cases: CaseResult[]): Record<string, number> {
  const ratios: Record<string, number> = {}
  for (const id of REST_READS) {
    const value = ratio(byId(cases, id), byId(cases, 'baseline'))
    if (value !== undefined) ratios[id] = rounded(value, 2)
  }
  return ratios
}

function atLeast (name: string, value: number | undefined, wanted: number, unit: string): Target {
  return {
    name,
    wanted: `≥ ${wanted}${unit}`,
    // Ratios cut (not rounded) to three digits, so that one just under its target reads as under it.
    measured: value === undefined ? 'not measured' : `${unit === '×' ? Math.floor(value * 1000) / 1000 : value}${unit}`,
    met: value === undefined ? null : value >= wanted
  }
}

/**
 * The replica case against the primary's: the same request, the reads on a streaming replica. Every
 * read of the case must have been served by the replica, or it measured the primary too.
 */
function replicaTargets (cases: CaseResult[], notRun: readonly NotRun[]): Target[] {
  const replica = byId(cases, 'rest-first-page-replica')
  const skipped = notRun.find(({ id }) => id === 'rest-first-page-replica')
  const name = 'REST first page read from a streaming replica vs from the primary'
  if (skipped !== undefined) return [{ name, wanted: '≥ 0.9×', measured: `not run: ${skipped.reason}`, met: null }]
  const routed = replica?.routed
  const total = routed === undefined ? 0 : routed.replica + routed.primary
  return [
    atLeast(name, ratio(replica, byId(cases, 'rest-first-page')), 0.9, '×'),
    {
      name: 'replica case: reads served by the replica',
      wanted: 'all',
      measured: routed === undefined || total === 0 ? 'not measured' : `${Math.floor(routed.replica / total * 1000) / 10} % (${routed.replica} of ${total})`,
      met: routed === undefined || total === 0 ? null : routed.primary === 0
    }
  ]
}

/**
 * The targets, each with what was measured; the harness itself never fails on them. `run`
 * is given for a full run of every case, whose time is a target too; `notRun` names the selected
 * cases that could not run here.
 */
export function evaluateTargets (cases: CaseResult[], run?: { wallSeconds: number }, notRun: readonly NotRun[] = []): Target[] {
  const first = byId(cases, 'rest-first-page')
  const nested = byId(cases, 'graphql-nested')
  const orders = byId(cases, 'orders-create')
  const api = cases.filter((c) => c.server === 'api' || c.server === 'api-replica')
  const failures = cases.reduce((n, c) => n + c.non2xx + c.errors + c.badBodies, 0)
  const peaks = api.map((c) => c.serverRss.peakMiB).filter((mib): mib is number => mib !== null)
  const peakRss = peaks.length === 0 ? undefined : Math.max(...peaks)
  // Sampled in MiB (as top shows it); the target is read in megabytes of 10^6 bytes, the stricter.
  const peakMegabytes = peakRss === undefined ? undefined : Math.round(peakRss * 1.048576)
  const targets = [
    atLeast('REST first page (authenticated) vs baseline', ratio(first, byId(cases, 'baseline')), 0.9, '×'),
    atLeast('REST deep keyset page vs first page', ratio(byId(cases, 'rest-deep-keyset'), first), 0.9, '×'),
    atLeast('REST deep keyset page vs the OFFSET page of that depth', ratio(byId(cases, 'rest-deep-keyset'), byId(cases, 'rest-deep-offset')), 20, '×'),
    atLeast('declared host resource\'s first page vs REST first page', ratio(byId(cases, 'rest-declared-first-page'), first), 0.95, '×'),
    atLeast('GraphQL nested (cost 6121) vs baseline', ratio(nested, byId(cases, 'baseline')), 0.18, '×'),
    atLeast('GraphQL nested vs the same answer from one SQL statement (node:http + pg)', ratio(nested, byId(cases, 'baseline-nested')), 0.9, '×'),
    {
      name: 'GraphQL nested: SQL statements per request',
      wanted: '≤ 2',
      measured: nested?.sqlPerRequest === null || nested === undefined ? 'not measured' : String(nested.sqlPerRequest),
      met: nested?.sqlPerRequest === null || nested === undefined ? null : nested.sqlPerRequest <= 2
    },
    atLeast('GraphQL flat vs REST first page', ratio(byId(cases, 'graphql-flat'), first), 0.8, '×'),
    ...byId(cases, 'rest-first-page-replica') !== undefined || notRun.some(({ id }) => id === 'rest-first-page-replica') ? replicaTargets(cases, notRun) : [],
    atLeast('POST /orders', orders?.reqPerSec, 1000, ' req/s'),
    // Bulk writes (issue 42, 6): rows/s of 100 rows a request against 100 single POSTs, at the same concurrency.
    atLeast(`POST /entries (a host resource with a hook): rows/s, ${BATCH} a request vs one a request`, rowsRatio(byId(cases, 'entries-create-batch'), byId(cases, 'entries-create')), 10, '×'),
    atLeast(`POST /orders: rows/s, ${BATCH} orders a request vs one a request`, rowsRatio(byId(cases, 'orders-create-batch'), orders), 10, '×'),
    {
      name: 'POST /orders and mixed: stock conserved',
      wanted: 'stock before − after = units ordered',
      measured: cases.filter((c) => c.stock !== undefined).map((c) => `${c.id}: ${c.stock?.stockBefore} − ${c.stock?.stockAfter} = ${(c.stock?.stockBefore ?? 0) - (c.stock?.stockAfter ?? 0)} vs ${c.stock?.unitsOrdered} ordered`).join('; '),
      met: cases.every((c) => c.stock === undefined || c.stock.conserved)
    },
    { name: 'errors (non-2xx, connection errors, error bodies), all cases', wanted: '0', measured: String(failures), met: failures === 0 },
    {
      name: 'API server RSS under load (peak)',
      wanted: '< 200 MB (10^6 bytes)',
      measured: peakMegabytes === undefined ? 'not measured' : `${peakRss} MiB = ${peakMegabytes} MB`,
      met: peakMegabytes === undefined ? null : peakMegabytes < 200
    }
  ]
  if (run !== undefined) {
    const { wallSeconds } = run
    targets.push({
      name: 'full run, seeding and build included',
      wanted: '≤ 10 min',
      measured: `${Math.floor(wallSeconds / 60)} min ${wallSeconds % 60} s`,
      met: wallSeconds <= 600
    })
  }
  return targets
}

/**
 * The first page holds ids 1–20, the shortest ids, names and e-mails of all; the deep page's are
 * five digits each, about 200 bytes more per page. The first page sorted by -id has those widths too,
 * so the deep page against it is what reading after a cursor costs, apart from the widths. The second
 * page (a cursor 20 rows in) against the deep page is what depth costs, and against the first page
 * what any cursor costs.
 */
export function evaluateControls (cases: CaseResult[]): Control[] {
  const deep = byId(cases, 'rest-deep-keyset')
  const second = byId(cases, 'rest-second-page')
  const controls: Array<[string, number | undefined]> = [
    ['REST deep keyset page vs first page sorted by -id (same widths)', ratio(deep, byId(cases, 'rest-first-page-desc'))],
    ['REST deep keyset page vs second page (what depth costs)', ratio(deep, second)],
    ['REST second page vs first page (what any cursor costs)', ratio(second, byId(cases, 'rest-first-page'))]
  ]
  return controls.flatMap(([name, value]) => value === undefined ? [] : [{ name, measured: `${Math.floor(value * 1000) / 1000}×` }])
}

const cell = (value: unknown) => value === undefined || value === null ? '–' : String(value)

export function markdown (report: Report): string {
  const { machine, settings } = report
  const lines = [
    `Run of ${report.date} (${report.mode}): ${machine.cpus} × ${machine.cpuModel}, ${machine.memoryGb} GiB, ` +
      `Node.js ${machine.node}, PostgreSQL ${report.postgres.version}; ${settings.connections} connections, ` +
      `${settings.seconds} s per case after ${settings.warmupSeconds} s of warm-up, median of ${settings.passes} pass(es); ` +
      `API: \`${report.api.command}\`.`,
    ...(report.mode === 'quick' ? ['', 'Quick mode proves that the harness runs and that every answer is right; its numbers measure nothing.'] : []),
    '',
    '| case | req/s | p50 ms | p99 ms | × baseline | SQL/req | SQL ms/req | CPU µs/req: server + pg | RSS peak MiB | failed | other load (cores) |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|'
  ]
  for (const c of report.cases) {
    const passes = c.passes === undefined ? '' : ` (${c.passes.join(', ')})`
    const failed = c.non2xx + c.errors + c.badBodies
    const rows = c.rowsPerSec === undefined || c.rowsPerSec === c.reqPerSec ? '' : `, ${c.rowsPerSec} rows/s`
    lines.push(`| ${c.id} | ${c.reqPerSec}${passes}${rows} | ${c.latencyMs.p50} | ${c.latencyMs.p99} | ${cell(report.ratioToBaseline[c.id])} | ` +
      `${cell(c.sqlPerRequest)} | ${cell(c.sqlMsPerRequest)} | ${c.cpuUsPerRequest.server} + ${c.cpuUsPerRequest.postgres} | ` +
      `${cell(c.serverRss.peakMiB)} | ${failed} | ${c.cpu.other} |`)
  }
  for (const { id, reason } of report.notRun ?? []) lines.push('', `Not run: \`${id}\`: ${reason.replace(/\.$/, '')}.`)
  const twice = report.cases.filter((c) => c.runs?.some((runs) => runs.length > 1)).map((c) => c.id)
  if (twice.length > 0) {
    lines.push('', `Each pass ran ${report.schedule.join(', ')}: ${twice.join(', ')} twice, in mirrored order, each ` +
      'pass\'s req/s the mean of its two runs (every run\'s req/s is in the JSON, `runs`).')
  }
  lines.push('', '| target | wanted | measured | met |', '|---|---|---|---|')
  for (const t of report.targets) lines.push(`| ${t.name} | ${t.wanted} | ${t.measured} | ${t.met === null ? '–' : t.met ? 'yes' : '**no**'} |`)
  if (report.controls.length > 0) {
    lines.push('', '| control | measured |', '|---|---|')
    for (const c of report.controls) lines.push(`| ${c.name} | ${c.measured} |`)
  }
  return lines.join('\n') + '\n'
}

/** Writes `<dir>/<date>.json` and `.md` (with `-2`, `-3`… when the day already has a run) and returns the JSON's path. */
export function save (report: Report, dir: string): string {
  mkdirSync(dir, { recursive: true })
  const day = report.date.slice(0, 10) + (report.mode === 'quick' ? '-quick' : '')
  let name = day
  for (let n = 2; existsSync(join(dir, `${name}.json`)); n++) name = `${day}-${n}`
  writeFileSync(join(dir, `${name}.json`), JSON.stringify(report, null, 2) + '\n')
  writeFileSync(join(dir, `${name}.md`), markdown(report))
  return join(dir, `${name}.json`)
}
