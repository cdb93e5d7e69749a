// What tap starts for each test file in `npm test`'s build (scripts/test.mjs): the file it names is a
// two-line launcher that runs the transpiled test beside it in a process of its own, the same node
// flags but without tap's process tracking. That tracker (@tapjs/processinfo) serves coverage, which
// this project has turned off, and costs every test process about as much CPU as its module loading:
// each module it loads goes through a loader hook, on Node 20 in a thread of its own (CONTRIBUTING.md
// gives the suite's times with and without it). The launcher loads next to nothing, so the tracker
// costs it nothing.
//
// Everything tap relies on passes through: the TAP stream (stdout), stderr, the exit code or signal,
// the signals tap sends, and the IPC channel by which a test asks for a longer timeout and tap tells
// it that it timed out.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const TRACKER = /@tapjs[\\/]processinfo/
// tap adds it so that a stack shows a test's TypeScript lines; the build has no source maps, and
// reading those of tap's own modules costs every test process CPU for nothing.
const DROPPED = new Set(['--enable-source-maps'])

const ORPHAN_GUARD = `--import=${new URL('test-orphan-guard.mjs', import.meta.url).href}`

/** Runs the test at `test` as tap would, without the tracker; this process ends as the test does. */
export function launch (test) {
  const flags = process.execArgv.filter((flag) => !TRACKER.test(flag) && !DROPPED.has(flag))
  // The tracker is also in NODE_OPTIONS, and it adds itself to every process this one spawns: `env`
  // sets the test's NODE_OPTIONS after it has done so.
  const nodeOptions = (process.env.NODE_OPTIONS ?? '').match(/"(?:\\.|[^"\\])*"|\S+/g)?.filter((option) => !TRACKER.test(option)).join(' ') ?? ''
  const child = spawn('env', [`NODE_OPTIONS=${nodeOptions}`, process.execPath, ...flags, ORPHAN_GUARD, fileURLToPath(test)], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc']
  })
  child.on('message', (message) => process.send?.(message))
  process.on('message', (message) => { if (child.connected) child.send(message) })
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal))
  // tap times a test out with a message, then SIGALRM, then SIGKILL half a second apart; its SIGKILL
  // would reach this launcher only. A test stuck in synchronous code handles neither the message nor
  // the signal (its handlers are JavaScript), nor the end of its channel: it is killed here first.
  process.on('SIGALRM', () => {
    child.kill('SIGALRM')
    setTimeout(() => child.kill('SIGKILL'), 300).unref()
  })
  child.on('exit', (code, signal) => {
    process.channel?.unref()
    if (signal !== null) {
      process.removeAllListeners(signal)
      process.kill(process.pid, signal)
    } else {
      process.exitCode = code ?? 1
    }
  })
}
