import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { apiEntryPoint, serverNodeFlags } from '../../bench/servers.js'

t.test('the benchmarked server gets the V8 flags of npm start, from package.json alone', async (t) => {
  const flags = serverNodeFlags()
  t.same(flags, ['--heap-growing-percent=75', '--no-allocation-site-pretenuring', '--liftoff-only'])
  const entry = await apiEntryPoint(false, () => {})
  t.same(entry.slice(0, flags.length), flags, 'they come first, before the entry point')
  t.notOk(entry.includes('--import') && entry.indexOf('--import') < flags.length, '--import is not taken for a V8 flag')
})

// V8's flags are not a stable API and node refuses to start on one it does not know ("bad option"),
// so `npm start` is checked on each Node that CI runs the suite on.
t.test('the Node running the tests starts with the V8 flags of npm start', async (t) => {
  const { stdout } = await promisify(execFile)(process.execPath, [...serverNodeFlags(), '--print', 'process.version'])
  t.equal(stdout.trim(), process.version)
})
