// Summarizes a V8 CPU profile (`node --cpu-prof`): where the process spent its own time, by
// package and by function. `npm run bench -- --profile` writes one for the API; to read one by hand:
//   npx tsx bench/profile.ts /tmp/tandem-bench/profiles/CPU.….cpuprofile
import { readFileSync } from 'node:fs'
import { pathToFileURL } from 'node:url'

interface ProfileNode {
  id: number
  callFrame: { functionName: string, url: string, lineNumber: number }
}

interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

export interface Share {
  name: string
  ms: number
  percent: number
}

export interface ProfileSummary {
  /** Sampled time, idle included. */
  totalMs: number
  /** Self time by package (`node_modules/<name>`), by our own folder (`app:db`…), or V8/Node.js itself. */
  byPackage: Share[]
  byFunction: Share[]
}

function packageOf (url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)'
  const modules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)
  if (modules !== null) return modules[1] ?? url
  if (url.startsWith('node:')) return 'node:' + (url.slice(5).split('/')[0] ?? '')
  const app = /\/(dist\/)?(db|plugins|routes|schema|server|index)[/.]/.exec(url)
  return app === null ? url : `app:${app[2] ?? ''}`
}

function top (totals: Map<string, number>, all: number, count: number): Share[] {
  return [...totals].sort((a, b) => b[1] - a[1]).slice(0, count)
    .map(([name, us]) => ({ name, ms: Math.round(us / 1000), percent: Math.round(us / all * 1000) / 10 }))
}

export function summarize (file: string, count = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const byPackage = new Map<string, number>()
  const byFunction = new Map<string, number>()
  let total = 0
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0
    const frame = nodes.get(id)?.callFrame
    if (frame === undefined) return
    total += us
    const pkg = packageOf(frame.url, frame.functionName)
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us)
    const where = frame.url === '' ? '' : ` ${frame.url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/(dist\/)?/, '')}:${frame.lineNumber + 1}`
    const name = `${frame.functionName || '(anonymous)'}${where}`
    byFunction.set(name, (byFunction.get(name) ?? 0) + us)
  })
  return { totalMs: Math.round(total / 1000), byPackage: top(byPackage, total, count), byFunction: top(byFunction, total, count) }
}

export function formatSummary (summary: ProfileSummary): string {
  const rows = (shares: Share[]) => shares.map((s) => `  ${String(s.percent).padStart(5)} %  ${String(s.ms).padStart(7)} ms  ${s.name}`).join('\n')
  return `sampled ${summary.totalMs} ms\nself time by package:\n${rows(summary.byPackage)}\nself time by function:\n${rows(summary.byFunction)}\n`
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  for (const file of process.argv.slice(2)) process.stdout.write(`${file}\n${formatSummary(summarize(file))}`)
}
