import t from 'tap'
import { configFromEnv, envName, validateOptions } from '../../plugins/config.js'
import { spawnServer, startServer } from '../helpers/processes.js'

const badConfigs: Array<[string, Record<string, string>, RegExp]> = [
  ['an unparsable number', { RATE_LIMIT_MAX: 'lots' }, /RATE_LIMIT_MAX must be integer/],
  ['a port out of range', { PORT: '70000' }, /PORT must be <= 65535/],
  ['production without a secret', { NODE_ENV: 'production' }, /JWT_SECRET is required when NODE_ENV is production/],
  ['a bad log level', { LOG_LEVEL: 'loud' }, /LOG_LEVEL/],
  ['a pool of no connections', { DATABASE_POOL_SIZE: '0' }, /DATABASE_POOL_SIZE must be >= 1/],
  ['metrics on the API\'s own port', { PORT: '3000', METRICS_PORT: '3000' }, /METRICS_PORT must differ from PORT/],
  ['a metrics allow-list that is not one', { METRICS_ALLOW: 'localhost' }, /METRICS_ALLOW has an entry that is not an address or CIDR/],
  ['a proxy trusted for every hop', { TRUST_PROXY: 'true' }, /TRUST_PROXY true is refused: .*left-most is the client's own/],
  ['an unreachable database', { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' }, /cannot start/]
]

for (const [label, env, message] of badConfigs) {
  t.test(`${label} stops the process with one clear line`, async (t) => {
    const { exited } = spawnServer(t, env)
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
