// The package as an importer gets it: built, packed, installed into a fresh application that has
// its own routes, hooks and error handler, type-checked there, and registered both all at once
// (`tandem`) and à la carte (database + auth + routes under /v2api + graphql); and installed beside
// the oldest Fastify its peer dependency allows, with the README's snippet.
import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import t from 'tap'
import { migratedDataDir, serverDatabase, serverUrl, type Test } from './helpers/database.js'

const execFileAsync = promisify(execFile)
// The children run as an importer's shell would run them: without tap's loaders in NODE_OPTIONS.
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_OPTIONS' && !name.startsWith('TAP') && !name.startsWith('_TAPJS')))
const run = (command: string, args: string[], options: { cwd?: string } = {}) => execFileAsync(command, args, { ...options, env, maxBuffer: 16 * 1024 * 1024 })
const root = fileURLToPath(new URL('..', import.meta.url))
const tsc = join(root, 'node_modules/typescript/bin/tsc')
const secret = 'a-host-secret-long-enough'
const skipped = new Set(['node_modules', 'dist', '.git', '.data', '.tap', 'coverage', 'test', 'bench'])

// Two installs, two type-checks and three embedded databases: more than tap's 120 s on a busy machine.
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

/** The oldest Fastify that package.json's `peerDependencies` allows: `^5.5.0` → `5.5.0`. */
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { peerDependencies: { fastify: string } }
const oldestFastify = manifest.peerDependencies.fastify.replace(/^\^/, '')

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
 * there and compiled with tsc.
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
      // Off, so that Tandem's own declarations are checked too.
      skipLibCheck: false
    },
    include: ['*.ts']
  }))
  const typecheck = run(process.execPath, [tsc, '-p', dir]).then(() => '', (error: { stdout?: string }) => error.stdout ?? String(error))
  return { dir, typecheck }
}

async function importHost (dir: string, file: string): Promise<(options: Record<string, unknown>) => Promise<FastifyInstance>> {
  const module = await import(pathToFileURL(join(dir, 'out', file)).href) as { buildHost: (options: Record<string, unknown>) => Promise<FastifyInstance> }
  return module.buildHost
}

/** Every copy of Fastify installed under `dir`, as `node_modules/…/fastify@version`. */
function fastifyCopies (dir: string, modules = 'node_modules'): string[] {
  let entries: string[]
  try {
    entries = readdirSync(join(dir, modules))
  } catch {
    return []
  }
  return entries
    .flatMap((entry) => entry.startsWith('@') ? readdirSync(join(dir, modules, entry)).map((name) => `${entry}/${name}`) : [entry])
    .flatMap((name) => {
      const path = `${modules}/${name}`
      const own = name === 'fastify' ? [`${path}@${(JSON.parse(readFileSync(join(dir, path, 'package.json'), 'utf8')) as { version: string }).version}`] : []
      return [...own, ...fastifyCopies(dir, `${path}/node_modules`)]
    })
}

const examples = Object.fromEntries(['host-app.ts', 'all-in-one.ts', 'labels.ts'].map((file) => [file, readFileSync(join(root, 'examples', file), 'utf8')]))
const packed = await pack()
// Installed before any test starts (both at once): the tests below only read what is ready.
const [host, oldest] = 'failed' in packed
  ? [undefined, undefined]
  : await Promise.all([
    hostApplication(packed.tarball, 'host', [], examples),
    hostApplication(packed.tarball, 'host-oldest', [`fastify@${oldestFastify}`], { ...examples, 'readme.ts': readmeSnippet(), 'peer-host.ts': peerHost })
  ])

if ('failed' in packed || host === undefined || oldest === undefined) {
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

  t.test('a TypeScript host compiles against the published types (options, decorators, request.user)', async (t) => {
    t.equal(await host.typecheck, '')
  })

  t.test('à la carte: database, auth, authRoutes and usersRoutes under /v2api, graphql', async (t) => {
    if (await host.typecheck !== '') return t.fail('the examples did not compile')
    const app = await (await importHost(host.dir, 'host-app.js'))({ jwtSecret: secret, ...await databaseOf(t) })
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
  })

  t.test('a host resource from one declaration: examples/labels.ts', async (t) => {
    if (await host.typecheck !== '') return t.fail('the examples did not compile')
    const app = await (await importHost(host.dir, 'labels.js'))({ jwtSecret: secret, logLevel: 'silent', ...await databaseOf(t) })
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
  })

  t.test('all at once: tandem beside the host\'s routes and error handler', async (t) => {
    if (await host.typecheck !== '') return t.fail('the examples did not compile')
    const app = await (await importHost(host.dir, 'all-in-one.js'))({ jwtSecret: secret, logLevel: 'silent', ...await databaseOf(t) })
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
  })

  t.test('a host installs one Fastify, its own: fastify is a peer dependency', async (t) => {
    t.same(fastifyCopies(host.dir).map((copy) => copy.replace(/@.*$/, '')), ['node_modules/fastify'], 'the latest allowed, installed for the host')
    t.same(fastifyCopies(oldest.dir), [`node_modules/fastify@${oldestFastify}`], 'the oldest allowed, as the host asked')
  })

  t.test(`regression: a host on Fastify ${oldestFastify} (the oldest allowed) type-checks app.register(tandem, …), app.db and the README snippet`, async (t) => {
    t.equal(await oldest.typecheck, '')
  })

  t.test(`a host on Fastify ${oldestFastify}: Tandem registers on it, app.db is its own, serverOptions() takes effect`, async (t) => {
    if (await oldest.typecheck !== '') return t.fail('the host did not compile')
    const app = await (await importHost(oldest.dir, 'peer-host.js'))({ jwtSecret: secret, logLevel: 'silent', ...await databaseOf(t) })
    t.teardown(() => app.close())
    await app.ready()
    t.same(json(await app.inject('/user-count')), { users: 0 })
    t.equal((await app.inject('/api/v1/products/')).statusCode, 200, 'a trailing slash is ignored: the router read routerOptions')
    t.equal((await app.inject('/api//v1/products')).statusCode, 200, 'and so are duplicate slashes')
  })

  t.test('the README snippet, run as written, registers Tandem', async (t) => {
    if (await oldest.typecheck !== '') return t.fail('the snippet did not compile')
    const server = serverUrl()
    const database = server === undefined ? {} : { DATABASE_URL: await serverDatabase(t, server) }
    const { DATABASE_URL: _suite, ...rest } = env
    const result = await execFileAsync(process.execPath, [join(oldest.dir, 'out', 'readme.js')], { cwd: oldest.dir, env: { ...rest, ...database, JWT_SECRET: secret } })
      .then(() => 'exited 0', (error: { code?: number, stderr?: string }) => `exited ${String(error.code)}: ${error.stderr ?? ''}`)
    t.equal(result, 'exited 0')
  })
}
