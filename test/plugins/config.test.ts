import Fastify from 'fastify'
import t from 'tap'
import tandem, { type TandemPluginOptions } from '../../app/tandem.js'
import { configFromEnv, envName, settingName, validateOptions } from '../../plugins/config.js'
import { serverOptions } from '../../plugins/server-options.js'
import { build, TEST_SECRET } from '../helpers/app.js'
import { migratedDataDir } from '../helpers/database.js'
import { SERVER_SECRET, spawnServer, startServer } from '../helpers/processes.js'

// The last, when true: the start gets as far as opening the database, which is then a migrated one
// (memory:// would cost it an initdb and the migrations).
const badConfigs: Array<[string, Record<string, string>, RegExp, opensDatabase?: true]> = [
  ['an unparsable number', { RATE_LIMIT_MAX: 'lots' }, /RATE_LIMIT_MAX must be integer/],
  ['a port out of range', { PORT: '70000' }, /PORT must be <= 65535/],
  ['production without a secret', { NODE_ENV: 'production' }, /JWT_SECRET is required when NODE_ENV is production/],
  ['a bad log level', { LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
  ['a pool of no connections', { DATABASE_POOL_SIZE: '0' }, /DATABASE_POOL_SIZE must be >= 1/],
  ['metrics on the API\'s own port', { PORT: '3000', METRICS_PORT: '3000' }, /METRICS_PORT must differ from PORT/],
  ['a metrics allow-list that is not one', { METRICS_ALLOW: 'localhost' }, /METRICS_ALLOW has an entry that is not an address or CIDR/],
  ['a proxy trusted for every hop', { TRUST_PROXY: 'true' }, /TRUST_PROXY true is refused: .*left-most is the client's own/],
  ['an unreachable database', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' }, /cannot start/],
  // Found by a plugin as the application starts, long after the environment was read.
  ['an unreachable Redis', { REDIS_URL: 'redis://127.0.0.1:1' }, /^tandem: cannot start: cannot connect to Redis \(REDIS_URL\)/, true]
]

for (const [label, env, message, opensDatabase] of badConfigs) {
  t.test(`${label} stops the process with one clear line`, async (t) => {
    const { exited } = spawnServer(t, { ...env, ...(opensDatabase === true ? { DATA_DIR: await migratedDataDir(t) } : {}) })
    const { code, stderr } = await exited
    t.not(code, 0)
    const lines = stderr.trim().split('\n')
    t.equal(lines.length, 1, stderr)
    t.match(lines[0], /^tandem: /)
    t.match(lines[0], message)
  })
}

t.test('a good configuration listens, answers, and exits 0 on SIGTERM', async (t) => {
  const { child, url, exited } = await startServer(t, {})
  t.equal((await fetch(`${url}/health`)).status, 200)
  const users = await fetch(`${url}/api/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'A', email: 'spawned@example.com' }) })
  t.equal(users.status, 201)
  child.kill('SIGTERM')
  const { code } = await exited
  t.equal(code, 0)
})

t.test('regression: a refused setting\'s value was quoted in the error line, secrets included', async (t) => {
  const refused = [
    { JWT_SECRET: 'short-secret' },
    { ADMIN_EMAIL: 'chief@example.com', ADMIN_PASSWORD: 'pass' },
    { DATABASE_URL: 'mysql://app:hunter2-secret@db/app' },
    { RATE_LIMIT_MAX: 'lots' }
  ]
  for (const env of refused) {
    const secret = Object.values(env).at(-1) as string
    const error = (() => { try { configFromEnv(env); return undefined } catch (error) { return error as Error } })()
    t.ok(error, `${Object.keys(env).join(', ')} is refused`)
    t.match(error?.message, new RegExp(`^invalid configuration: ${Object.keys(env).at(-1) as string} `), 'naming the variable')
    t.notOk(error?.message.includes(secret), 'never quoting its value')
    t.notOk(error?.message.includes('hunter2'), 'nor a part of it')
  }
})

t.test('environment names derive from option names', async (t) => {
  t.equal(envName('rateLimitMax'), 'RATE_LIMIT_MAX')
  t.equal(envName('graphqlMaxDepth'), 'GRAPHQL_MAX_DEPTH')
  t.equal(envName('port'), 'PORT')
  const defaults = validateOptions({})
  t.equal(defaults.port, 3000)
  t.equal(defaults.host, '127.0.0.1')
  t.equal(defaults.jwtExpiresIn, '15m')
  t.equal(defaults.rateLimitMax, 1000)
  t.equal(defaults.rateLimitWindow, '1 minute')
  t.equal(defaults.graphqlMaxDepth, 8)
  t.equal(defaults.graphqlMaxComplexity, 10000)
  t.equal(defaults.databaseStatementTimeout, 10_000, 'statements are cancelled after 10 s unless told otherwise')
  t.equal(defaults.requestTimeout, 30_000)
  t.equal(defaults.trustProxy, undefined, 'no proxy is trusted unless told')
  t.equal(validateOptions({ trustProxy: '10.0.0.0/8, 127.0.0.1' }).trustProxy, '10.0.0.0/8, 127.0.0.1')
  t.throws(() => validateOptions({ trustProxy: 'everyone' }), /trustProxy must match pattern/)
  t.equal(validateOptions({ trustProxy: '1' }).trustProxy, '1', 'a hop count')
  // Every hop trusted: the left-most X-Forwarded-For entry, which the client writes, would be its address.
  t.throws(() => validateOptions({ trustProxy: 'true' }), /^invalid configuration: trustProxy true is refused: .*left-most is the client's own; give the number of proxies/)
  t.throws(() => validateOptions({ trustProxy: true } as unknown as Record<string, unknown>), /trustProxy true is refused/, 'as a boolean too')
  t.throws(() => validateOptions({ trustProxy: '10.0.0.1, 0.0.0.0/0' }), /trustProxy covering every address is refused/)
  t.throws(() => validateOptions({ trustProxy: '::/0' }), /trustProxy covering every address is refused/)
  t.throws(() => validateOptions({ rateLimitMax: 0 }), /rateLimitMax must be >= 1/)
  t.equal(defaults.metrics, false, 'no metrics unless asked')
  t.equal(defaults.metricsPort, undefined)
  t.equal(configFromEnv({ METRICS: 'true' }).metrics, true)
  t.equal(configFromEnv({ METRICS_PORT: '9464' }).metricsPort, 9464)
  t.equal(validateOptions({ port: 0, metricsPort: 0 }).metricsPort, 0, 'two free ports do not clash')
  t.equal(defaults.metricsAllow, '127.0.0.0/8,::1', '/metrics on the API\'s port: loopback only unless told')
  t.equal(configFromEnv({ METRICS_ALLOW: '10.0.0.0/8, 2001:db8::/32,192.0.2.1' }).metricsAllow, '10.0.0.0/8, 2001:db8::/32,192.0.2.1')
  for (const bad of ['everyone', '10.0.0.0/33', '10.0.0.1,', '300.1.1.1', '::1/129', '10.0.0.0/8/8']) {
    t.throws(() => validateOptions({ metricsAllow: bad }), /^invalid configuration: metricsAllow has an entry that is not an address or CIDR/, bad)
  }
  t.throws(() => validateOptions({ unknownOption: 1 }), /unknownOption/)
  t.equal(defaults.graphqlMaxVariablesBytes, 512 * 1024, 'GraphQL variables are bounded unless told otherwise')
  t.equal(configFromEnv({ GRAPHQL_MAX_VARIABLES_BYTES: '1048576' }).graphqlMaxVariablesBytes, 1048576)
  t.equal(defaults.graphqlIntrospection, undefined, 'introspection follows nodeEnv unless set')
  t.equal(configFromEnv({ GRAPHQL_INTROSPECTION: 'true' }).graphqlIntrospection, true)
  t.equal(configFromEnv({ GRAPHQL_INTROSPECTION: 'false' }).graphqlIntrospection, false)
})

t.test('regression: ADMIN_EMAIL naming a signed-up account stopped the start naming adminEmail, an option the operator never set; now it names ADMIN_EMAIL', async (t) => {
  const dataDir = await migratedDataDir(t)
  const first = await startServer(t, { DATA_DIR: dataDir })
  const signUp = await fetch(`${first.url}/api/v1/users`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Chief', email: 'chief@example.com', password: 'correct horse battery' }) })
  t.equal(signUp.status, 201)
  first.child.kill('SIGTERM')
  t.equal((await first.exited).code, 0)

  const { code, stderr } = await spawnServer(t, { DATA_DIR: dataDir, JWT_SECRET: SERVER_SECRET, PORT: '0', ADMIN_EMAIL: 'chief@example.com', ADMIN_PASSWORD: 'another-password' }).exited
  t.not(code, 0)
  const lines = stderr.trim().split('\n')
  t.equal(lines.length, 1, stderr)
  t.match(lines[0], /^tandem: cannot start: ADMIN_EMAIL chief@example\.com belongs to an account that is not an administrator/)
  t.notMatch(stderr, /adminEmail/, 'not the option\'s name, which the operator never used')
})

t.test('errors found after the environment was read name a setting as the operator set it: its variable, or its option', async (t) => {
  const signedUp = await build(t)
  const res = await signedUp.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'Chief', email: 'chief@example.com', password: 'correct horse battery' } })
  t.equal(res.statusCode, 201)
  // Tandem over the same database, as server.ts starts it: the configuration spread into the options.
  const start = async (options: TandemPluginOptions) => {
    const app = Fastify(serverOptions({ logLevel: 'silent' }))
    t.teardown(() => app.close())
    await app.register(tandem, { db: signedUp.db, jwtSecret: TEST_SECRET, ...options })
    await app.ready()
  }
  const admin = { ADMIN_EMAIL: 'chief@example.com', ADMIN_PASSWORD: 'another-password' }
  await t.rejects(start(configFromEnv(admin)), { name: 'ConfigError', message: /^ADMIN_EMAIL chief@example\.com belongs to an account that is not an administrator/ })
  await t.rejects(start({ adminEmail: 'chief@example.com', adminPassword: 'another-password' }), { message: /^adminEmail chief@example\.com belongs/ }, 'an option: its name')
  await t.rejects(start({ ...configFromEnv({ ...admin, ADMIN_EMAIL: 'boss@example.com' }), adminEmail: 'chief@example.com' }), { message: /^adminEmail chief@example\.com belongs/ }, 'a host\'s value over the environment\'s: the option')

  await t.rejects(start(configFromEnv({ RESOURCES_MODULE: 'test/app/fixtures/missing.mjs' })), /^RESOURCES_MODULE test\/app\/fixtures\/missing\.mjs could not be loaded/)
  await t.rejects(start({ resourcesModule: 'test/app/fixtures/missing.mjs' }), /^resourcesModule test\/app\/fixtures\/missing\.mjs could not be loaded/, 'not the variable of a server it never ran in')
  await t.rejects(start({ ...configFromEnv({ RESOURCES_MODULE: 'test/app/fixtures/notes.mjs' }), resources: [] }), /give resources and migrations, or RESOURCES_MODULE, not both/)
  await t.rejects(start({ ...configFromEnv({ CORS_ORIGINS: 'https://app.example.com' }), security: false }), /^invalid configuration: CORS_ORIGINS needs security/)
  t.throws(() => serverOptions({ ...configFromEnv({}), trustProxy: 'true' }), /^invalid configuration: trustProxy true is refused/, 'a host\'s own setting')
})

t.test('settingName: the variable while the value is the environment\'s, the option otherwise', async (t) => {
  const fromEnv = configFromEnv({ PORT: '8080' })
  t.equal(settingName(fromEnv, 'port'), 'PORT')
  t.equal(settingName(fromEnv, 'adminPassword'), 'ADMIN_PASSWORD', 'unset there too')
  t.equal(settingName({ ...fromEnv, host: '0.0.0.0' }, 'host'), 'host', 'changed by the host')
  t.equal(settingName({ ...fromEnv, host: '0.0.0.0' }, 'port'), 'PORT', 'the others still the environment\'s')
  t.equal(settingName(validateOptions({ ...fromEnv }), 'port'), 'PORT', 'through validation again, as each plugin does')
  t.equal(settingName(validateOptions({ port: 8080 }), 'port'), 'port')
  t.throws(() => validateOptions({ ...fromEnv, rateLimitMax: 0 }), /^invalid configuration: rateLimitMax must be >= 1/)
  t.throws(() => validateOptions({ ...configFromEnv({ PORT: '3000' }), metricsPort: 3000 }), /^invalid configuration: metricsPort must differ from PORT/)
})
