import { readFileSync, readdirSync } from 'node:fs'
import os from 'node:os'

// Linux's USER_HZ: /proc reports CPU time in these ticks.
const TICKS_PER_SECOND = 100

const mib = (kb: number) => Math.round(kb / 1024)

function readRssKb (pid: number): number | undefined {
  try {
    const line = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return line === null ? undefined : Number(line[1])
  } catch {
    return undefined
  }
}

export interface Rss {
  peakMiB: number | null
  meanMiB: number | null
}

/** Samples the resident memory (VmRSS) of `pid` every 200 ms until stopped. */
export function watchRss (pid: number): { stop: () => Rss } {
  const samples: number[] = []
  const sample = () => {
    const kb = readRssKb(pid)
    if (kb !== undefined) samples.push(kb)
  }
  sample()
  const timer = setInterval(sample, 200)
  return {
    stop () {
      clearInterval(timer)
      sample()
      if (samples.length === 0) return { peakMiB: null, meanMiB: null }
      return { peakMiB: mib(Math.max(...samples)), meanMiB: mib(samples.reduce((a, b) => a + b, 0) / samples.length) }
    }
  }
}

interface ProcessTicks { ppid: number, ticks: number }

export interface CpuSample {
  at: number
  /** Busy ticks of all CPUs, from /proc/stat. */
  busy: number
  processes: Map<number, ProcessTicks>
}

function busyTicks (): number {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number)
  // user nice system idle iowait irq softirq steal: everything but idle and iowait is busy.
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields
  return user + nice + system + irq + softirq + steal
}

function processTicks (pid: string): ProcessTicks | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    // After "pid (comm) ": state ppid … utime (11th) stime (12th).
    return { ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) }
  } catch {
    return undefined
  }
}

export function sampleCpu (): CpuSample {
  const processes = new Map<number, ProcessTicks>()
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    const ticks = processTicks(pid)
    if (ticks !== undefined) processes.set(Number(pid), ticks)
  }
  return { at: performance.now(), busy: busyTicks(), processes }
}

/** Average number of cores each party kept busy between two samples. */
export interface CpuShare {
  server: number
  postgres: number
  /** This process: autocannon and the bench's own bookkeeping. */
  loadGenerator: number
  /** Everything else on the machine: other people's work disturbs the measurement. */
  other: number
}

/**
 * Splits the machine's busy CPU time between `after` and `before`: the server's process, the
 * PostgreSQL postmaster and its children (on a shared server, also other clients' backends), this
 * process, and the rest (total busy time minus those three, so processes that came and went count too).
 */
export function cpuBetween (before: CpuSample, after: CpuSample, roles: { server: number, postmaster: number | undefined }): CpuShare {
  const seconds = (after.at - before.at) / 1000
  const used = (pid: number) => (after.processes.get(pid)?.ticks ?? 0) - (before.processes.get(pid)?.ticks ?? 0)
  let postgres = 0
  if (roles.postmaster !== undefined) {
    postgres += used(roles.postmaster)
    for (const [pid, { ppid }] of after.processes) if (ppid === roles.postmaster) postgres += used(pid)
  }
  const server = used(roles.server)
  const loadGenerator = used(process.pid)
  const other = Math.max(0, (after.busy - before.busy) - server - postgres - loadGenerator)
  const cores = (ticks: number) => Math.round(ticks / TICKS_PER_SECOND / seconds * 100) / 100
  return { server: cores(server), postgres: cores(postgres), loadGenerator: cores(loadGenerator), other: cores(other) }
}

/** The postmaster of a PostgreSQL backend running on this machine; undefined when `pid` is no local backend. */
export function postmasterOf (backendPid: number): number | undefined {
  try {
    if (!readFileSync(`/proc/${backendPid}/comm`, 'utf8').startsWith('postgres')) return undefined
  } catch {
    return undefined
  }
  return processTicks(String(backendPid))?.ppid
}

export interface Machine {
  cpus: number
  cpuModel: string
  memoryGb: number
  os: string
  node: string
  loadAverage: number[]
}

export function describeMachine (): Machine {
  const cpus = os.cpus()
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    memoryGb: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
    loadAverage: os.loadavg().map((n) => Math.round(n * 100) / 100)
  }
}
