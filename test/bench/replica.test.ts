// The bench's replica case (issue 41, 6): the first page read from a streaming replica, judged
// against the same page read from the primary, and a case that cannot run here says why.
import pg from 'pg'
import t from 'tap'
import { combineRuns, medianPass, type CaseResult } from '../../bench/measure.js'
import { openReplica } from '../../bench/replica.js'
import { evaluateTargets, markdown, type NotRun, type Report } from '../../bench/report.js'
import { freePort } from '../../bench/servers.js'
import { QUICK } from '../../bench/settings.js'
import { onServer, replicaPair, replicasSkip } from '../helpers/replicas.js'

function run (id: string, reqPerSec: number, extra: Partial<CaseResult> = {}): CaseResult {
  return {
    id,
    title: id,
    server: 'api',
    seconds: 3,
    connections: 10,
    requests: reqPerSec * 3,
    reqPerSec,
    latencyMs: { p50: 3, p99: 9, max: 20 },
    non2xx: 0,
    errors: 0,
    badBodies: 0,
    sqlPerRequest: 1,
    sqlMsPerRequest: 0.02,
    cpuUsPerRequest: { server: 300, postgres: 70 },
    serverRss: { peakMiB: 140, meanMiB: 130 },
    cpu: { server: 0.9, postgres: 0.2, loadGenerator: 0.3, other: 0 },
    ...extra
  }
}

const REPLICA = 'rest-first-page-replica'
const onReplica = (reqPerSec: number, routed: CaseResult['routed']) => run(REPLICA, reqPerSec, { server: 'api-replica', routed })
const targetsOf = (cases: CaseResult[], notRun: NotRun[] = []) => evaluateTargets(cases, undefined, notRun)
const named = (targets: ReturnType<typeof evaluateTargets>, start: string) => targets.find((target) => target.name.startsWith(start))

t.test('the replica case is judged against the first page on the primary, and only when the replica served every read', async (t) => {
  const first = run('rest-first-page', 1000)
  const all = targetsOf([first, onReplica(950, { replica: 2850, primary: 0 })])
  t.match(named(all, 'REST first page read from a streaming replica'), { wanted: '≥ 0.9×', measured: '0.95×', met: true })
  t.match(named(all, 'replica case: reads served'), { wanted: 'all', measured: '100 % (2850 of 2850)', met: true })
  t.match(named(targetsOf([first, onReplica(850, { replica: 2550, primary: 0 })]), 'REST first page read from'), { measured: '0.85×', met: false })
  // Reads the primary served (a replica found lagging or down) mean the case measured the primary too.
  t.match(named(targetsOf([first, onReplica(950, { replica: 100, primary: 3 })]), 'replica case: reads served'), { measured: '97 % (100 of 103)', met: false })
  t.equal(named(targetsOf([first]), 'REST first page read from'), undefined, 'no row when the case was not selected')
})

t.test('the reads a replica served are summed over a pass\'s runs and over the passes', async (t) => {
  const pass = (a: number, b: number) => combineRuns([onReplica(1000, { replica: a, primary: 0 }), onReplica(1000, { replica: b, primary: 1 })])
  t.same(pass(10, 20).routed, { replica: 30, primary: 1 })
  t.same(medianPass([pass(10, 20), pass(1, 2), pass(5, 5)]).routed, { replica: 43, primary: 3 })
  t.equal(medianPass([run('rest-first-page', 1), run('rest-first-page', 2)]).routed, undefined)
})

t.test('a replica case that cannot run says why, in its target and under the table', async (t) => {
  const reason = 'no streaming replica could be made of the bench\'s server (.ci/replica.sh standby): no pg_basebackup'
  const notRun = [{ id: REPLICA, reason }]
  const targets = targetsOf([run('rest-first-page', 1000)], notRun)
  t.match(named(targets, 'REST first page read from'), { measured: `not run: ${reason}`, met: null })
  const report: Report = {
    date: '2026-11-28T00:00:00.000Z',
    mode: 'quick',
    machine: { cpus: 2, cpuModel: 'cpu', memoryGb: 24, os: 'Linux', node: 'v20', loadAverage: [0, 0, 0] },
    postgres: { version: '15', origin: 'started' },
    api: { command: 'node dist/server.js' },
    settings: { ...QUICK },
    dataset: { seededInMs: null },
    wallSeconds: 60,
    deepCursor: { pages: 0, ms: 0 },
    backgroundStatementsPerSecond: 0,
    schedule: ['rest-first-page'],
    cases: [run('rest-first-page', 1000)],
    ratioToBaseline: {},
    targets,
    controls: [],
    notRun
  }
  t.match(markdown(report), `Not run: \`${REPLICA}\`: ${reason}.`)
})

t.test('a server that cannot be copied gives the reason', async (t) => {
  const port = await freePort()
  const made = await openReplica(`postgres://postgres@127.0.0.1:${port}/postgres`, () => {})
  t.ok('notMade' in made)
  if ('notMade' in made) t.match(made.notMade, /^no streaming replica could be made of the bench's server \(\.ci\/replica\.sh standby\): \S/)
})

t.test('a standby of the server the bench measures, removed at the end without touching that server', { skip: replicasSkip() }, async (t) => {
  const pair = await replicaPair(t)
  await onServer(pair.primary, 'create table marked (n int)')
  await onServer(pair.primary, 'insert into marked values (41)')
  const made = await openReplica(pair.primary, () => {})
  if (!('replica' in made)) throw new Error(made.notMade)
  t.teardown(made.replica.stop)
  t.same(await onServer(made.replica.url, 'select pg_is_in_recovery() as standby, (select n from marked) as n'), [{ standby: true, n: 41 }])
  await made.replica.stop()
  const client = new pg.Client({ connectionString: made.replica.url, connectionTimeoutMillis: 2_000 })
  client.on('error', () => {})
  await t.rejects(client.connect(), 'the standby is gone')
  t.same(await onServer(pair.primary, 'select n from marked'), [{ n: 41 }], 'the primary still serves')
})
