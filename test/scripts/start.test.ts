// scripts/start.mjs, what `npm start` runs: its build of the sources in .tandem/ and what it clears there.
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, utimesSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { root } from '../helpers/root.js'

t.test('regression: a start of changed sources removed everything in .tandem older than an hour, the tests\' snapshots and the bench\'s module too; now only old builds', async (t) => {
  // A checkout of its own, so that the start builds (its sources are new there) and clears.
  const checkout = mkdtempSync(join(tmpdir(), 'tandem-start-'))
  t.teardown(() => rmSync(checkout, { recursive: true, force: true }))
  for (const path of ['server.ts', 'scripts/start.mjs', 'scripts/transpiled.mjs', 'app', 'graphql', 'plugins', 'rules', 'routes', 'schema', 'db']) cpSync(join(root, path), join(checkout, path), { recursive: true })
  symlinkSync(join(root, 'node_modules'), join(checkout, 'node_modules'), 'dir')
  const kept = ['test-snapshots', 'bench']
  const stale = ['0123456789abcdef', '0123456789abcdef.4242.partial']
  const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000)
  for (const entry of [...kept, ...stale]) {
    mkdirSync(join(checkout, '.tandem', entry), { recursive: true })
    utimesSync(join(checkout, '.tandem', entry), twoHoursAgo, twoHoursAgo)
  }

  // A port out of range stops the server as soon as it reads its configuration, after the build.
  const stopped = await promisify(execFile)(process.execPath, ['scripts/start.mjs'], { cwd: checkout, env: { PATH: process.env.PATH, PORT: '70000' } })
    .then(() => 'exited 0', (error: { code?: number, stderr?: string }) => `exited ${String(error.code)}: ${error.stderr ?? ''}`)
  t.match(stopped, /^exited 1: tandem: invalid configuration: PORT/)

  const left = readdirSync(join(checkout, '.tandem'))
  t.ok(left.some((entry) => /^[0-9a-f]{16}$/.test(entry) && existsSync(join(checkout, '.tandem', entry, 'server.js'))), 'the build of these sources')
  for (const entry of stale) t.notOk(left.includes(entry), `an old build goes: ${entry}`)
  for (const entry of kept) t.ok(left.includes(entry), `what the start did not make stays: ${entry}`)
})
