// `npm test`: tap over the suite as plain JavaScript. esbuild transpiles every TypeScript file of the
// checkout once (without a type check, like tsx) into .tandem/tests/<hash of the sources>/, where
// every other file is a link to the checkout's; tap then runs there with no module loader. A loader
// (tsx) transpiles nothing costly, but its hooks run in a thread of their own that every import of
// every test process waits on (CONTRIBUTING.md gives both times). tap's runner starts the tests
// without its process tracker (scripts/test-runner.mjs). Arguments go to tap; a test file may be
// named by its source (`npm test -- test/db/seed.test.ts`).
//
// `npx tap test/...` still runs the sources themselves through tsx (package.json's `tap`).
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { bundleTests } from './test-bundle.mjs'
import { buildOnce, markUsed } from './transpiled.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
// Not sources: installs, builds, data, tap's own files.
const skipped = new Set(['.git', 'node_modules', 'dist', '.tandem', '.tap', '.data', 'coverage'])
const TYPESCRIPT = /(?<!\.d)\.ts$/
const TEST = /^test\/.*\.test\.ts$/

/** Every file under `folder` (relative to the root), but what is skipped. */
function walk (folder) {
  return readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) => {
    if (skipped.has(entry.name) || entry.name.endsWith('.tgz')) return []
    const path = join(folder, entry.name)
    return entry.isDirectory() ? walk(path) : [path]
  })
}

// What the build is made from besides the TypeScript: this script, the manifest it rewrites (tap's
// settings, the start script's flags that tests read), esbuild's settings and esbuild itself.
const MADE_FROM = ['scripts/test.mjs', 'scripts/test-bundle.mjs', 'scripts/transpiled.mjs', 'package.json', 'tsconfig.json', 'node_modules/esbuild/package.json']

// Each test file bundled with what it imports (scripts/test-bundle.mjs), unless TANDEM_TEST_BUNDLE=0:
// then every module loads from its own file, as in an application (CI runs one suite so).
const BUNDLED = process.env.TANDEM_TEST_BUNDLE !== '0'
// The bundles hold the installed packages' code: what npm installed (its record of node_modules, which
// every install rewrites) is part of what they are made from.
const INSTALLED = ['node_modules/.package-lock.json', 'package-lock.json']

/** The files, and a name for the build: their paths, the TypeScript's content (the rest are links) and what makes it. */
function sources () {
  const files = walk('').sort()
  const hash = createHash('sha256')
  hash.update(BUNDLED ? 'bundled' : 'unbundled')
  for (const file of MADE_FROM) hash.update(file).update(readFileSync(join(root, file)))
  const installed = INSTALLED.find((file) => existsSync(join(root, file)))
  if (BUNDLED && installed !== undefined) hash.update(installed).update(readFileSync(join(root, installed)))
  for (const file of files) {
    hash.update(file)
    if (TYPESCRIPT.test(file)) hash.update(readFileSync(join(root, file)))
  }
  return { files, name: hash.digest('hex').slice(0, 16) }
}

/** package.json for the build: its own entry point (a self-reference to `tandem-api` finds the transpiled index), tap run without tsx. */
function buildManifest () {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  const exports = { '.': './index.js', './package.json': './package.json' }
  const tap = {
    ...manifest.tap,
    include: manifest.tap.include.map((pattern) => pattern.replace(/\.ts$/, '.js')),
    before: manifest.tap.before.replace(/\.ts$/, '.js'),
    'node-arg': [...manifest.tap['node-arg'].filter((arg) => arg !== '--import=tsx'), `--import=${new URL('test-orphan-guard.mjs', import.meta.url).href}`]
  }
  return JSON.stringify({ ...manifest, main: './index.js', exports, tap }, null, 2)
}

const { files, name } = sources()
const out = await buildOnce({
  root,
  builds: join(root, '.tandem', 'tests'),
  name,
  files,
  finish: async (dir, final) => {
    // The TypeScript is linked too: a test that starts a process through tsx, or type-checks, finds it.
    for (const file of files) {
      if (file === 'package.json') continue
      mkdirSync(dirname(join(dir, file)), { recursive: true })
      symlinkSync(join(root, file), join(dir, file))
    }
    writeFileSync(join(dir, 'package.json'), buildManifest())
    if (BUNDLED) await bundleTests({ dir, final, tests: files.filter((file) => TEST.test(file)).map((file) => file.replace(/\.ts$/, '.js')) })
  },
  current: () => sources().name,
  again: 'run the tests again'
})

// A test file named by its source (relative to the checkout, or not) runs as its transpiled self.
const args = process.argv.slice(2).map((arg) => {
  const file = relative(root, resolve(arg))
  return /^test\/.*\.test\.ts$/.test(file) ? file.replace(/\.ts$/, '.js') : arg
})
// Coverage is off (package.json); this keeps it off for the `before` script too, which tap starts with
// its process tracking and no say on coverage: its report would be the only one printed.
const env = { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0' }
const tap = spawn(process.execPath, [`--import=${new URL('test-runner.mjs', import.meta.url).href}`, join(root, 'node_modules', 'tap', 'dist', 'esm', 'run.mjs'), ...args], { cwd: out, env, stdio: 'inherit' })
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => tap.kill(signal))
tap.on('exit', (code, signal) => {
  markUsed(out)
  if (signal === null) process.exit(code ?? 1)
  process.removeAllListeners(signal)
  process.kill(process.pid, signal)
})
