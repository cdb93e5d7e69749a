// What `npm test` is made of besides tap: the `node` its runner starts tests with (scripts/test-node.sh),
// the bundling of a test file (scripts/test-bundle.mjs), and the package test's host compiler
// (test/helpers/host-compile.mjs). Each run here on a small fixture of its own.
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { type Test } from '../helpers/database.js'
import { root } from '../helpers/root.js'

const run = promisify(execFile)

function fixture (t: Test, files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'tandem-runner-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, file)), { recursive: true })
    writeFileSync(join(dir, file), text)
  }
  return dir
}

t.test('test-node.sh runs node without tap\'s tracker and source maps, every other flag and argument as given', async (t) => {
  const dir = fixture(t, { 'show.mjs': 'process.stdout.write(JSON.stringify({ flags: process.execArgv, args: process.argv.slice(2), options: process.env.NODE_OPTIONS }))' })
  const tracker = `--import=${pathToFileURL(join(root, 'node_modules/@tapjs/processinfo/dist/esm/import.mjs')).href}`
  const { stdout } = await run(join(root, 'scripts/test-node.sh'), ['--enable-source-maps', tracker, '--no-warnings', join(dir, 'show.mjs'), 'an argument with  two spaces', '*'], {
    env: { PATH: process.env.PATH, TANDEM_TEST_NODE: process.execPath, NODE_OPTIONS: `--max-old-space-size=512 ${tracker}` }
  })
  t.same(JSON.parse(stdout), { flags: ['--no-warnings'], args: ['an argument with  two spaces', '*'], options: '--max-old-space-size=512' })
})

t.test('a bundled module keeps its own location and its own names; a package it imports when used stays a module of its own', async (t) => {
  const dir = fixture(t, {
    'build/lib/where.js': [
      'export const url = import.meta.url',
      'export const quoted = "import.meta.url"',
      'export const dir = import.meta.dirname',
      ''
    ].join('\n'),
    'modules/legacy/package.json': JSON.stringify({ name: 'legacy', main: 'index.js' }),
    'modules/legacy/index.js': 'exports.dir = __dirname\nexports.file = __filename\n',
    'modules/shadowing/package.json': JSON.stringify({ name: 'shadowing', main: 'index.js' }),
    'modules/shadowing/index.js': 'function f () { const __dirname = "its own"; return __dirname }\nexports.own = f()\nexports.dir = __dirname\n',
    'modules/lazy/package.json': JSON.stringify({ name: 'lazy', main: 'index.js' }),
    'modules/lazy/index.js': 'exports.Named = class Named {}\n',
    'build/lib/effect.js': 'globalThis.effect = "ran"\n',
    'build/package.json': JSON.stringify({ name: 'fixture', type: 'module', sideEffects: false }),
    'build/test/a.test.js': [
      'import * as where from "../lib/where.js"',
      // Imported for what it does only: run as Node runs it, whatever a package.json says of side effects.
      'import "../lib/effect.js"',
      'import legacy from "legacy"',
      'import shadowing from "shadowing"',
      'const { Named } = await import("lazy")',
      'process.stdout.write(JSON.stringify({ where: { ...where }, legacy, shadowing, named: typeof Named, effect: globalThis.effect }))',
      ''
    ].join('\n')
  })
  // As in the build: node_modules is a link to packages outside it.
  const packages = join(dir, 'modules')
  const build = join(dir, 'build')
  symlinkSync(packages, join(build, 'node_modules'), 'dir')
  const final = join(dir, 'final')
  const script = `const { bundleTests } = await import(${JSON.stringify(pathToFileURL(join(root, 'scripts/test-bundle.mjs')).href)}); await bundleTests({ dir: ${JSON.stringify(build)}, final: ${JSON.stringify(final)}, tests: ['test/a.test.js'] })`
  await run(process.execPath, ['--input-type=module', '-e', script], { cwd: root })
  const { stdout } = await run(process.execPath, [join(build, 'test/a.test.js')])
  t.same(JSON.parse(stdout), {
    where: { url: pathToFileURL(join(final, 'lib/where.js')).href, quoted: 'import.meta.url', dir: join(final, 'lib') },
    legacy: { dir: join(packages, 'legacy'), file: join(packages, 'legacy/index.js') },
    shadowing: { own: 'its own', dir: join(packages, 'shadowing') },
    named: 'function',
    effect: 'ran'
  }, 'the build\'s own files as they will be found, packages where they are')
})

t.test('host-compile.mjs reports errors in the named packages\' declarations and the host\'s files, not in other packages\'', async (t) => {
  const declarations = (error: boolean) => `export declare const value: ${error ? 'Missing' : 'number'}\n`
  const dir = fixture(t, {
    'tsconfig.json': JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, outDir: 'out', skipLibCheck: true, types: [] }, include: ['*.ts'] }),
    'package.json': JSON.stringify({ type: 'module' }),
    'host.ts': 'import { value } from \'checked\'\nimport { other } from \'unchecked\'\nexport const sum: number = value + other\n',
    'node_modules/checked/package.json': JSON.stringify({ name: 'checked', types: 'index.d.ts' }),
    'node_modules/checked/index.d.ts': declarations(true),
    'node_modules/unchecked/package.json': JSON.stringify({ name: 'unchecked', types: 'index.d.ts' }),
    'node_modules/unchecked/index.d.ts': 'export declare const other: number\nexport declare const broken: Missing\n'
  })
  const compile = () => run(process.execPath, [join(root, 'test/helpers/host-compile.mjs'), dir, 'checked']).then(() => '', (error: { stdout?: string }) => error.stdout ?? String(error))
  const failed = await compile()
  t.match(failed, /node_modules\/checked\/index\.d\.ts\(1,\d+\): error TS2304: Cannot find name 'Missing'/)
  t.notMatch(failed, /unchecked/, 'another package\'s declarations are not checked')
  writeFileSync(join(dir, 'node_modules/checked/index.d.ts'), declarations(false))
  t.equal(await compile(), '', 'and once they are right, it compiles')
  writeFileSync(join(dir, 'host.ts'), 'import { value } from \'checked\'\nexport const text: string = value\n')
  t.match(await compile(), /host\.ts\(2,\d+\): error TS2322/, 'the host\'s own errors')
})
