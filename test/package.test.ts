// The package as an importer gets it: built, packed, installed into fresh applications that have
// their own routes, hooks and error handler, type-checked there, and registered both all at once
// (`tandem`) and à la carte (database + auth + routes under /v2api + graphql). Two hosts: one with
// none of the optional peer dependencies (it imports the package, is told which package a feature
// it asks for needs, and serves a real PostgreSQL), and one with all of them, beside the oldest
// Fastify its peer dependency allows, with the README's snippet.
import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { basename, dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import type { fastify as Fastify, FastifyInstance, LightMyRequestResponse } from 'fastify'
import t, { type Test as TapTest } from 'tap'
import type * as Tandem from '../index.js'
import { OPTIONAL_PACKAGES } from '../plugins/optional-packages.js'
import { migratedDataDir, serverDatabase, serverUrl, type Test } from './helpers/database.js'
import { root } from './helpers/root.js'

const execFileAsync = promisify(execFile)
// The children run as an importer's shell would run them: without tap's loaders in NODE_OPTIONS.
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_OPTIONS' && !name.startsWith('TAP') && !name.startsWith('_TAPJS')))
const run = (command: string, args: string[], options: { cwd?: string } = {}) => execFileAsync(command, args, { ...options, env, maxBuffer: 16 * 1024 * 1024 })
const hostCompile = join(root, 'test/helpers/host-compile.mjs')
const secret = 'a-host-secret-long-enough'
const skipped = new Set(['node_modules', 'dist', '.git', '.data', '.tandem', '.tap', 'coverage', 'test', 'bench'])

// Two installs, two type-checks, a few children and three embedded databases: more than tap's 120 s on a busy machine.
t.setTimeout(360_000)

const work = mkdtempSync(join(tmpdir(), 'tandem-package-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))

const json = (res: LightMyRequestResponse): Record<string, any> => JSON.parse(res.body)

/** With `DATABASE_URL`, a fresh database on that server for the host; else an embedded one already migrated. */
async function databaseOf (t: Test): Promise<{ databaseUrl: string } | { dataDir: string }> {
  const server = serverUrl()
  return server === undefined ? { dataDir: await migratedDataDir(t) } : { databaseUrl: await serverDatabase(t, server) }
}

/**
 * `npm run build` in a copy of the sources (so that a build running in the working tree is never
 * disturbed), then `npm pack` of what it built. Returns the tarball, or why it could not be made.
 */
async function pack (): Promise<{ tarball: string, files: string[] } | { failed: string }> {
  const source = join(work, 'source')
  cpSync(root, source, { recursive: true, filter: (path) => !skipped.has(basename(path)) && !path.endsWith('.tgz') })
  symlinkSync(join(root, 'node_modules'), join(source, 'node_modules'), 'dir')
  try {
    await run('npm', ['run', 'build'], { cwd: source })
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string, stderr?: string }
    return { failed: `npm run build failed:\n${(stdout + stderr).slice(-2000)}` }
  }
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: source })
  const [info] = JSON.parse(stdout) as Array<{ filename: string, files: Array<{ path: string }> }>
  if (info === undefined) throw new Error(`npm pack said nothing useful: ${stdout}`)
  return { tarball: join(work, info.filename), files: info.files.map((file) => file.path) }
}

interface Manifest {
  dependencies: Record<string, string>
  devDependencies: Record<string, string>
  peerDependencies: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
}
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Manifest
/** The oldest Fastify that package.json's `peerDependencies` allows: `^5.5.0` → `5.5.0`. */
const oldestFastify = (manifest.peerDependencies.fastify ?? '').replace(/^\^/, '')
/** The optional peer dependencies, as package.json has them: name → version range. */
const optionalPeers = Object.fromEntries(Object.entries(manifest.peerDependencies).filter(([name]) => manifest.peerDependenciesMeta?.[name]?.optional === true))

/** The README's first TypeScript snippet under "Using the plugins in your own Fastify application", as written. */
function readmeSnippet (): string {
  const readme = readFileSync(join(root, 'README.md'), 'utf8')
  const section = readme.slice(readme.indexOf('## Using the plugins in your own Fastify application'))
  const snippet = /```ts\n([\s\S]*?)```/.exec(section)?.[1]
  if (snippet === undefined) throw new Error('the README has no TypeScript snippet for hosts')
  // The snippet registers and stops there, as a host's own code goes on; run alone, it then closes
  // the application (on a real server the pool and the revocation poll would keep it running).
  return `${snippet}\nawait app.ready()\nawait app.close()\n`
}

// A host on the oldest Fastify allowed: Tandem's decorators are typed on the host's own instance, and
// `serverOptions()` is understood (its router settings need that Fastify).
const peerHost = `import Fastify, { type FastifyInstance } from 'fastify'
import { serverOptions, tandem, type TandemOptions } from 'tandem-api'

export async function buildHost (options: TandemOptions): Promise<FastifyInstance> {
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  await app.register(tandem, options)
  app.get('/user-count', async () => ({ users: (await app.db.selectFrom('users').select('id').execute()).length }))
  return app
}
`

/**
 * A fresh application in `work/<name>` with the tarball and `packages` installed, `files` written
 * there and compiled as tsc would, Tandem's own declarations checked too (test/helpers/host-compile.mjs).
 */
async function hostApplication (tarball: string, name: string, packages: string[], files: Record<string, string>): Promise<{ dir: string, typecheck: Promise<string> }> {
  const dir = join(work, name)
  mkdirSync(dir)
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'host', private: true, type: 'module' }))
  // What a TypeScript host has besides: Node's types, and those of ws that Mercurius's types import.
  const typings = ['@types/node@20', '@types/ws@8']
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts', '--no-package-lock', tarball, ...packages, ...typings], { cwd: dir })
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text)
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: {
      target: 'ES2022',
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      outDir: 'out',
      skipLibCheck: true
    },
    include: ['*.ts']
  }))
  // Tandem's declarations, and those of the modules they augment (`declare module`): a conflict
  // between the two may be reported in either.
  const typecheck = run(process.execPath, [hostCompile, dir, 'tandem-api', 'fastify', '@fastify/jwt']).then(() => '', (error: { stdout?: string }) => error.stdout ?? String(error))
  return { dir, typecheck }
}

async function importHost (dir: string, file: string): Promise<(options: Record<string, unknown>) => Promise<FastifyInstance>> {
  const module = await import(pathToFileURL(join(dir, 'out', file)).href) as { buildHost: (options: Record<string, unknown>) => Promise<FastifyInstance> }
  return module.buildHost
}

/** Every copy of Fastify installed under `dir`, as `node_modules/…/fastify@version`. */
function copiesOf (name: string, dir: string, modules = 'node_modules'): string[] {
  let entries: string[]
  try {
    entries = readdirSync(join(dir, modules))
  } catch {
    return []
  }
  return entries
    .flatMap((entry) => entry.startsWith('@') ? readdirSync(join(dir, modules, entry)).map((name) => `${entry}/${name}`) : [entry])
    .flatMap((entry) => {
      const path = `${modules}/${entry}`
      const own = entry === name ? [`${path}@${(JSON.parse(readFileSync(join(dir, path, 'package.json'), 'utf8')) as { version: string }).version}`] : []
      return [...own, ...copiesOf(name, dir, `${path}/node_modules`)]
    })
}

/**
 * Tandem and Fastify as installed in a host's `dir`, imported in this process. Tandem's entry is read
 * from its installed package.json, not resolved by name: the loader running the tests maps the name
 * `tandem-api` to this checkout's sources (tsconfig.json's `paths`), wherever it is imported from.
 */
async function installedIn (dir: string): Promise<{ tandem: typeof Tandem, Fastify: typeof Fastify }> {
  const resolve = createRequire(join(dir, 'package.json')).resolve
  const installed = join(dir, 'node_modules', 'tandem-api')
  const { exports } = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { exports: { '.': { default: string } } }
  const [tandem, fastify] = await Promise.all([
    import(pathToFileURL(join(installed, exports['.'].default)).href) as Promise<typeof Tandem>,
    import(pathToFileURL(resolve('fastify')).href) as Promise<{ default: typeof Fastify }>
  ])
  return { tandem, Fastify: fastify.default }
}

/** What `fn` threw or rejected with, as `{ name, message }`; undefined when it did not. */
async function failureOf (fn: () => unknown): Promise<{ name: string, message: string } | undefined> {
  try {
    await fn()
    return undefined
  } catch (error) {
    return { name: (error as Error).name, message: (error as Error).message }
  }
}

/**
 * Runs `node` with `args` in `dir` as an importer's shell would; its exit code and output. Killed
 * after 90 s: a server that starts when it should have refused to would listen for ever. With
 * --liftoff-only, as `npm start` runs the server and tap the tests: a host that opens the embedded
 * database otherwise pays V8 optimizing PGlite's WebAssembly (the README's snippet, which runs
 * initdb and the migrations in memory, about twice the CPU), which changes nothing it does.
 */
async function node (dir: string, args: string[], extra: Record<string, string> = {}): Promise<{ code: number, stdout: string, stderr: string }> {
  const { DATABASE_URL: _suite, ...rest } = env
  return execFileAsync(process.execPath, ['--liftoff-only', ...args], { cwd: dir, env: { ...rest, ...extra }, maxBuffer: 16 * 1024 * 1024, timeout: 90_000, killSignal: 'SIGKILL' })
    .then(({ stdout, stderr }) => ({ code: 0, stdout, stderr }), (error: { code?: number, stdout?: string, stderr?: string }) => ({ code: error.code ?? -1, stdout: error.stdout ?? '', stderr: error.stderr ?? '' }))
}

/** The module specifiers of the `import` statements and `import()` calls in the built package's JavaScript. */
function builtImports (dir: string): Set<string> {
  const dist = join(dirname(createRequire(join(dir, 'package.json')).resolve('tandem-api/package.json')), 'dist')
  const files = readdirSync(dist, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.js'))
  const specifiers = files.flatMap((file) => [...readFileSync(join(dist, file), 'utf8').matchAll(/(?:\bfrom |\bimport\()'([^'.][^']*)'/g)].map((match) => match[1] ?? ''))
  // A package's name, without its subpath: `@scope/name/sub` → `@scope/name`, `name/sub` → `name`.
  return new Set(specifiers.map((specifier) => specifier.split('/').slice(0, specifier.startsWith('@') ? 2 : 1).join('/')))
}

// A host that has all of them: the embedded database, GraphiQL and a log for people, in one process
// that closes once it has its answers (the log's lines go to its stdout, its answers to stderr).
const fullHost = `import Fastify from 'fastify'
import { serverOptions, tandem } from 'tandem-api'

const app = Fastify(serverOptions({ logLevel: 'info', logFormat: 'pretty' }))
// No overload answers: the embedded database's start can delay the loop past their limit on a busy machine.
await app.register(tandem, { jwtSecret: process.env.JWT_SECRET, dataDir: process.env.DATA_DIR, overloadMaxEventLoopDelay: 0 })
const statuses: Record<string, number> = {}
for (const url of ['/health', '/graphiql', '/graphiql/assets/graphiql.js', '/graphiql/assets/react.js']) statuses[url] = (await app.inject(url)).statusCode
await app.close()
process.stderr.write(JSON.stringify(statuses))
`

const examples = Object.fromEntries(['host-app.ts', 'all-in-one.ts', 'labels.ts'].map((file) => [file, readFileSync(join(root, 'examples', file), 'utf8')]))
const packed = await pack()
// Installed before any test starts (both at once): the tests below only read what is ready. The
// bare host installs the tarball alone (npm adds Fastify, the one peer that is not optional); the
// full one every optional peer as package.json names it, beside the oldest Fastify allowed.
const [bare, full] = 'failed' in packed
  ? [undefined, undefined]
  : await Promise.all([
    hostApplication(packed.tarball, 'host-bare', [], examples),
    hostApplication(packed.tarball, 'host-full', [`fastify@${oldestFastify}`, ...Object.entries(optionalPeers).map(([name, range]) => `${name}@${range}`)], {
      ...examples, 'readme.ts': readmeSnippet(), 'peer-host.ts': peerHost, 'full-host.ts': fullHost
    })
  ])

/** À la carte: database, auth, authRoutes and usersRoutes under /v2api, graphql (examples/host-app.ts). */
async function aLaCarte (t: TapTest, dir: string): Promise<void> {
  const app = await (await importHost(dir, 'host-app.js'))({ jwtSecret: secret, ...await databaseOf(t) })
  t.teardown(() => app.close())
  await app.ready()

  const hello = await app.inject('/hello')
  t.equal(hello.statusCode, 200)
  t.same(json(hello), { hello: 'world' })
  t.equal(hello.headers['x-served-by'], 'host-app', 'the host hook runs on its routes')

  const boom = await app.inject('/boom')
  t.equal(boom.statusCode, 500)
  t.same(json(boom), { ok: false, message: 'the host failed' }, 'the host error handler still handles host routes')

  const created = await app.inject({ method: 'POST', url: '/v2api/users', payload: { name: 'Ada', email: 'ada@host.example', password: 'correct horse battery' } })
  t.equal(created.statusCode, 201)
  t.match(json(created), { id: Number, name: 'Ada', email: 'ada@host.example' })
  t.equal(created.headers['x-served-by'], 'host-app', 'the host hook runs on Tandem routes too')

  const invalid = await app.inject({ method: 'POST', url: '/v2api/users', payload: { name: 'No email' } })
  t.equal(invalid.statusCode, 400)
  t.same(json(invalid), { error: 'email is required', field: 'email' }, 'Tandem routes answer in Tandem\'s error shape')

  const anonymous = await app.inject('/v2api/users')
  t.equal(anonymous.statusCode, 401)
  t.equal(anonymous.headers['www-authenticate'], 'Bearer')
  t.match(json(anonymous), { error: String })
  t.notOk('ok' in json(anonymous))

  const login = await app.inject({ method: 'POST', url: '/v2api/auth/login', payload: { email: 'ada@host.example', password: 'correct horse battery' } })
  t.equal(login.statusCode, 200)
  const authorization = `Bearer ${String(json(login).accessToken)}`

  const list = await app.inject({ url: '/v2api/users', headers: { authorization } })
  t.equal(list.statusCode, 200)
  t.same(json(list).data.map((user: { email: string }) => user.email), ['ada@host.example'])

  const whoami = await app.inject({ url: '/whoami', headers: { authorization } })
  t.same(json(whoami), { userId: json(created).id }, 'a host route guarded by Tandem\'s auth rule')
  const refused = await app.inject('/whoami')
  t.equal(refused.statusCode, 401)
  t.match(json(refused), { ok: false }, 'and its 401 goes through the host error handler')

  const query = await app.inject({ method: 'POST', url: '/graphql', headers: { authorization }, payload: { query: '{ users(limit: 5) { name email } }' } })
  t.equal(query.statusCode, 200)
  t.same(json(query), { data: { users: [{ name: 'Ada', email: 'ada@host.example' }] } })

  const unknown = await app.inject('/v2api/nothing-here')
  t.equal(unknown.statusCode, 404, 'unknown paths under the prefix are left to the host')
  t.equal((await app.inject('/api/v1/users')).statusCode, 404, 'nothing mounted where the host did not ask')
}

/** A host resource from one declaration: examples/labels.ts. */
async function labels (t: TapTest, dir: string): Promise<void> {
  const app = await (await importHost(dir, 'labels.js'))({ jwtSecret: secret, logLevel: 'silent', ...await databaseOf(t) })
  t.teardown(() => app.close())
  await app.ready()
  const payload = { name: 'Lee', email: 'lee@host.example', password: 'correct horse battery' }
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/users', payload })).statusCode, 201)
  const login = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: payload.email, password: payload.password } })
  const authorization = `Bearer ${String(json(login).accessToken)}`
  const created = await app.inject({ method: 'POST', url: '/api/v1/labels', headers: { authorization }, payload: { name: 'urgent', color: '#ff0000' } })
  t.equal(created.statusCode, 201)
  t.match(json(created), { id: Number, name: 'urgent', color: '#ff0000', owner_id: Number })
  const list = await app.inject({ url: '/api/v1/labels?q=rgen', headers: { authorization } })
  t.match(json(list), { data: [{ name: 'urgent' }], pagination: { hasMore: false } })
}

/** All at once: tandem beside the host's routes and error handler (examples/all-in-one.ts). */
async function allInOne (t: TapTest, dir: string): Promise<void> {
  const app = await (await importHost(dir, 'all-in-one.js'))({ jwtSecret: secret, logLevel: 'silent', ...await databaseOf(t) })
  t.teardown(() => app.close())
  await app.ready()

  t.same(json(await app.inject('/hello')), { hello: 'world' })
  t.same(json(await app.inject('/boom')), { ok: false, message: 'the host failed' })
  t.same(json(await app.inject('/health')), { status: 'ok' })

  const products = await app.inject('/api/v1/products')
  t.equal(products.statusCode, 200)
  t.match(json(products), { data: [], pagination: { hasMore: false } })

  const unknown = await app.inject('/api/v1/nothing-here')
  t.equal(unknown.statusCode, 404)
  t.match(json(unknown), { error: String }, 'unknown routes under /api answer in Tandem\'s shape')

  const badId = await app.inject('/api/v1/products/abc')
  t.equal(badId.statusCode, 400)
  t.match(json(badId), { field: 'id' })

  const query = await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ __typename }' } })
  t.same(json(query), { data: { __typename: 'Query' } })
  const spec = await app.inject('/openapi.json')
  t.equal(spec.statusCode, 200)
}

const server = serverUrl()
/** The examples' tests, on the host in `host` once it has compiled them. */
function examplesOn (t: TapTest, host: { dir: string, typecheck: Promise<string> }): void {
  for (const [name, run] of [
    ['à la carte: database, auth, authRoutes and usersRoutes under /v2api, graphql', aLaCarte],
    ['a host resource from one declaration: examples/labels.ts', labels],
    ['all at once: tandem beside the host\'s routes and error handler', allInOne]
  ] as const) {
    t.test(name, async (t) => {
      if (await host.typecheck !== '') return t.fail('the examples did not compile')
      await run(t, host.dir)
    })
  }
}

if ('failed' in packed || bare === undefined || full === undefined) {
  t.plan(0, `skipped: the package could not be built, so it cannot be tested as an importer would: ${'failed' in packed ? packed.failed : ''}`)
} else {
  const { files } = packed

  t.test('the tarball holds the built package and nothing else', async (t) => {
    t.ok(files.includes('dist/index.js'))
    t.ok(files.includes('dist/index.d.ts'), 'types beside the code')
    t.ok(files.includes('dist/schema/graphql/Query.graphql'), 'the GraphQL SDL files are copied into dist')
    t.ok(files.some((file) => file.startsWith('dist/db/migrations/')), 'migrations ship with it')
    t.same(files.filter((file) => !file.startsWith('dist/') && !['package.json', 'README.md', 'LICENSE'].includes(file)), [])
    t.same(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts')), [], 'no TypeScript sources')
  })

  t.test('regression: a host installed GraphiQL with React, pino-pretty, PGlite and a package only a test uses', async (t) => {
    const byFeature = Object.fromEntries(Object.values(OPTIONAL_PACKAGES).flatMap((packages) => Object.entries(packages)))
    t.same(optionalPeers, byFeature, 'the optional peers are what the features need (plugins/optional-packages.ts), at the same versions')
    for (const [name, range] of Object.entries(optionalPeers)) {
      t.notOk(name in manifest.dependencies, `${name} is no dependency`)
      t.equal(manifest.devDependencies[name], range, `${name} is a development dependency: npm ci && npm test/start have it`)
    }
    const imported = builtImports(bare.dir)
    t.same(Object.keys(manifest.dependencies).filter((name) => !imported.has(name)), [], 'every dependency is imported by the built package (none only by tests)')
    const readme = readFileSync(join(root, 'README.md'), 'utf8')
    t.same(Object.entries(optionalPeers).filter(([name, range]) => !readme.includes(`\`${name}@${range}\``)), [], 'the README\'s table of optional packages names each, at its version')
    t.same(Object.keys(optionalPeers).filter((name) => existsSync(join(bare.dir, 'node_modules', name))), [], 'the bare host has none of the optional packages')
    t.same(Object.keys(optionalPeers).filter((name) => !existsSync(join(full.dir, 'node_modules', name))), [], 'the full host has them all')
  })

  t.test('a TypeScript host compiles against the published types (options, decorators, request.user), with no optional package', async (t) => {
    t.equal(await bare.typecheck, '')
  })

  t.test('a host with no optional package imports the package: none of them is loaded until its feature starts', async (t) => {
    const imported = await node(bare.dir, ['--input-type=module', '-e', 'const tandem = await import(\'tandem-api\'); process.stdout.write(typeof tandem.tandem)'])
    t.same(imported, { code: 0, stdout: 'function', stderr: '' })
  })

  t.test('regression: a host asking for a feature without its package gets one clear error naming the package to install', async (t) => {
    const { tandem, Fastify } = await installedIn(bare.dir)
    const embedded = /^the embedded database \(used when (databaseUrl|DATABASE_URL) is not set\) needs @electric-sql\/pglite and kysely-pglite-dialect, which are not installed: npm install @electric-sql\/pglite@\^0\.4\.6 kysely-pglite-dialect@\^1\.3\.1, or set \1 to a PostgreSQL server's URL$/

    const byHost = await failureOf(() => tandem.connect({}))
    t.match(byHost, { name: 'ConfigError', message: embedded }, 'connect() without databaseUrl')
    t.match(byHost?.message, /used when databaseUrl is not set/, 'named as a host calls it')
    const fromEnv = Fastify({ logger: false })
    t.teardown(() => fromEnv.close())
    const byOperator = await failureOf(() => fromEnv.register(tandem.tandem, tandem.configFromEnv({ JWT_SECRET: secret })).ready())
    t.match(byOperator, { name: 'ConfigError', message: embedded }, 'tandem from the environment')
    t.match(byOperator?.message, /used when DATABASE_URL is not set\) .* or set DATABASE_URL /, 'named as the operator calls it')

    const pretty = /^(logFormat|LOG_FORMAT) pretty needs pino-pretty, which is not installed: npm install pino-pretty@\^13\.2\.0, or set \1 to json$/
    t.match(await failureOf(() => tandem.serverOptions({ logLevel: 'info', logFormat: 'pretty' })), { name: 'ConfigError', message: pretty }, 'a pretty log asked for')
    t.match((await failureOf(() => tandem.serverOptions(tandem.configFromEnv({ LOG_FORMAT: 'pretty' }))))?.message, /^LOG_FORMAT pretty/, 'named as the operator calls it')
    const traced = Fastify({ logger: false })
    t.teardown(() => traced.close())
    t.match(await failureOf(() => traced.register(tandem.tracing).ready()), {
      name: 'ConfigError',
      message: /^tracing \(OpenTelemetry spans\) needs @fastify\/otel, which is not installed: npm install @fastify\/otel@\^0\.21\.2, or leave tracing off/
    }, 'the tracing plugin registered')
    const unasked = tandem.serverOptions({ logLevel: 'info' }, { stdoutIsTerminal: true }).logger as { transport?: unknown }
    t.equal(unasked.transport, undefined, 'unasked, at a terminal in development: JSON lines, as pino writes them itself')
  })

  t.test('the server without the packages of what it is asked for: one line, exit ≠ 0', async (t) => {
    const serverJs = join(bare.dir, 'node_modules/tandem-api/dist/server.js')
    const cases: Array<[string, Record<string, string>, RegExp]> = [
      ['the embedded database', { DATA_DIR: 'memory://' }, /^tandem: cannot start: the embedded database \(used when DATABASE_URL is not set\) needs @electric-sql\/pglite and kysely-pglite-dialect, .*, or set DATABASE_URL to a PostgreSQL server's URL$/],
      ['a pretty log', { LOG_FORMAT: 'pretty', DATA_DIR: 'memory://' }, /^tandem: LOG_FORMAT pretty needs pino-pretty, which is not installed: npm install pino-pretty@\^13\.2\.0, or set LOG_FORMAT to json$/],
      ['its own traces', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', DATA_DIR: 'memory://' }, /^tandem: OTEL_EXPORTER_OTLP_ENDPOINT needs @fastify\/otel, @opentelemetry\/exporter-trace-otlp-http, @opentelemetry\/instrumentation-pg, @opentelemetry\/resources and @opentelemetry\/sdk-trace-node, which are not installed: npm install @fastify\/otel@\^0\.21\.2 .*@opentelemetry\/sdk-trace-node@\^2\.12\.0, or unset OTEL_EXPORTER_OTLP_ENDPOINT$/]
    ]
    for (const [label, extra, line] of cases) {
      const { code, stderr } = await node(bare.dir, [serverJs], { ...extra, JWT_SECRET: secret, PORT: '0' })
      t.not(code, 0, label)
      t.equal(stderr.trim().split('\n').length, 1, `${label}: one line, no stack trace`)
      t.match(stderr.trim(), line, label)
    }
  })

  t.test('a host with no optional package serves a real PostgreSQL', { skip: server === undefined ? 'no DATABASE_URL: a host without the embedded database\'s packages needs a real PostgreSQL server; set DATABASE_URL to run these' : false }, async (t) => {
    examplesOn(t, bare)
    t.test('GraphiQL asked for: one clear error naming its packages', async (t) => {
      const { tandem, Fastify } = await installedIn(bare.dir)
      const app = Fastify({ logger: false })
      t.teardown(() => app.close())
      const database = await databaseOf(t)
      t.match(await failureOf(() => app.register(tandem.tandem, { jwtSecret: secret, graphql: { graphiql: true }, ...database }).ready()), {
        name: 'ConfigError',
        message: /^GraphiQL \(graphiql: true\) needs graphiql, react and react-dom, which are not installed: npm install graphiql@\^3\.9\.0 react@\^18\.3\.1 react-dom@\^18\.3\.1, or pass graphiql: false$/
      })
    })
    t.test('GraphiQL, not asked for and not installed: not served, and a warning says how to have it', async (t) => {
      const { tandem, Fastify } = await installedIn(bare.dir)
      const lines: string[] = []
      const app = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => { lines.push(line) } } } })
      t.teardown(() => app.close())
      await app.register(tandem.tandem, { jwtSecret: secret, ...await databaseOf(t) })
      await app.ready()
      t.equal((await app.inject('/graphiql')).statusCode, 404)
      t.same(json(await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ __typename }' } })), { data: { __typename: 'Query' } }, 'GraphQL itself is served')
      const warnings = lines.map((line) => (JSON.parse(line) as { msg: string }).msg).filter((message) => message.includes('GraphiQL'))
      t.equal(warnings.length, 1, 'one warning')
      t.match(warnings[0], /^GraphiQL is not served: graphiql, react and react-dom are not installed \(npm install graphiql@\^3\.9\.0 react@\^18\.3\.1 react-dom@\^18\.3\.1\); graphiql: false leaves it out without this warning$/)
    })
  })

  t.test('a host with every optional package', async (t) => {
    t.test('the embedded database, GraphiQL and a log for people', async (t) => {
      if (await full.typecheck !== '') return t.fail('the host did not compile')
      const { code, stdout, stderr } = await node(full.dir, [join(full.dir, 'out', 'full-host.js')], { JWT_SECRET: secret, DATA_DIR: await migratedDataDir(t) })
      t.equal(code, 0, stderr)
      t.same(JSON.parse(stderr), { '/health': 200, '/graphiql': 200, '/graphiql/assets/graphiql.js': 200, '/graphiql/assets/react.js': 200 })
      t.match(stdout, /^\[[0-9:.]+\] INFO: request completed$/m, 'pino-pretty\'s lines')
      t.notMatch(stdout, /^\{/m, 'no JSON line')
    })
    // Without a server, the examples run here, on the embedded database.
    if (server === undefined) examplesOn(t, full)
  })

  t.test('a host installs one Fastify, its own: fastify is a peer dependency', async (t) => {
    t.same(copiesOf('fastify', bare.dir).map((copy) => copy.replace(/@.*$/, '')), ['node_modules/fastify'], 'the latest allowed, installed for the host')
    t.same(copiesOf('fastify', full.dir), [`node_modules/fastify@${oldestFastify}`], 'the oldest allowed, as the host asked')
  })

  // Regression: kysely-pglite-dialect accepts any Kysely, so npm on a Node the newest Kysely supports
  // installed that one for the host and Tandem's own beneath it; the host's migrations and hooks were
  // then typed against a Kysely that Tandem does not run (the examples did not compile).
  t.test('a host installs one Kysely, the one Tandem runs: kysely is a peer dependency', async (t) => {
    // `^0.28.18` allows 0.28.x only.
    const series = (manifest.peerDependencies.kysely ?? '').replace(/^\^(\d+\.\d+)\..*$/, '$1')
    for (const host of [bare, full]) {
      const copies = copiesOf('kysely', host.dir)
      t.equal(copies.length, 1, copies.join(', '))
      t.equal(copies[0]?.replace(/\.\d+$/, ''), `node_modules/kysely@${series}`)
    }
  })

  t.test(`regression: a host on Fastify ${oldestFastify} (the oldest allowed) type-checks app.register(tandem, …), app.db and the README snippet`, async (t) => {
    t.equal(await full.typecheck, '')
  })

  t.test(`a host on Fastify ${oldestFastify}: Tandem registers on it, app.db is its own, serverOptions() takes effect`, async (t) => {
    if (await full.typecheck !== '') return t.fail('the host did not compile')
    const app = await (await importHost(full.dir, 'peer-host.js'))({ jwtSecret: secret, logLevel: 'silent', ...await databaseOf(t) })
    t.teardown(() => app.close())
    await app.ready()
    t.same(json(await app.inject('/user-count')), { users: 0 })
    t.equal((await app.inject('/api/v1/products/')).statusCode, 200, 'a trailing slash is ignored: the router read routerOptions')
    t.equal((await app.inject('/api//v1/products')).statusCode, 200, 'and so are duplicate slashes')
  })

  t.test('the README snippet, run as written, registers Tandem', async (t) => {
    if (await full.typecheck !== '') return t.fail('the snippet did not compile')
    const database: Record<string, string> = server === undefined ? {} : { DATABASE_URL: await serverDatabase(t, server) }
    const result = await node(full.dir, [join(full.dir, 'out', 'readme.js')], { ...database, JWT_SECRET: secret })
    t.equal(result.code === 0 ? 'exited 0' : `exited ${result.code}: ${result.stderr}`, 'exited 0')
  })
}
