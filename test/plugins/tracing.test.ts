// OpenTelemetry traces (CONTRACT §12): a span per request, per GraphQL operation and per SQL
// statement, through the tracer provider the application registered or one it passes.
import { SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import Fastify from 'fastify'
import { sql } from 'kysely'
import t from 'tap'
import { serverOptions } from '../../plugins/server-options.js'
import tracing from '../../plugins/tracing.js'
import { startTracing } from '../../plugins/tracing-sdk.js'

// The server entry point's SDK, as `npm start` starts it when OTEL_EXPORTER_OTLP_ENDPOINT is set, with
// the spans kept in memory. Started before the helpers load `pg`, as server.ts does, so that on
// DATABASE_URL the statements' spans come from @opentelemetry/instrumentation-pg.
const exporter = new InMemorySpanExporter()
startTracing(new SimpleSpanProcessor(exporter))
const { authHeaders, build, graphql, signUp, testDb, TEST_SECRET } = await import('../helpers/app.js')
const { default: tandem } = await import('../../app/tandem.js')

const requestSpans = (spans: ReadableSpan[]) => spans.filter((span) => span.kind === SpanKind.SERVER)
const operationSpans = (spans: ReadableSpan[]) => spans.filter((span) => span.attributes['graphql.operation.type'] !== undefined || span.name === 'GraphQL Operation')
const statementSpans = (spans: ReadableSpan[]) => spans.filter((span) => span.attributes['db.query.text'] !== undefined)
const idOf = (span: ReadableSpan) => span.spanContext().spanId

/** Whether `ancestor` is `span`'s parent, or its parent's parent, and so on. */
function descends (span: ReadableSpan, ancestor: ReadableSpan, spans: ReadableSpan[]): boolean {
  const byId = new Map(spans.map((s) => [idOf(s), s]))
  for (let parent = span.parentSpanContext?.spanId; parent !== undefined; parent = byId.get(parent)?.parentSpanContext?.spanId) {
    if (parent === idOf(ancestor)) return true
  }
  return false
}

t.test('a REST request: one span named after its route, with its status, above its statements', async (t) => {
  const app = await build(t, { tracing: true })
  const user = await signUp(app)
  exporter.reset()
  // W3C trace context: the caller's trace goes on here.
  const callersTrace = '0af7651916cd43dd8448eb211c80319c'
  const headers = { ...await authHeaders(app, { id: user.id }), traceparent: `00-${callersTrace}-b7ad6b7169203331-01` }
  const res = await app.inject({ url: `/api/v1/users/${user.id}`, headers })
  t.equal(res.statusCode, 200)

  const spans = exporter.getFinishedSpans()
  const [request, ...others] = requestSpans(spans)
  t.same(others, [], 'one request span')
  t.equal(request?.name, 'GET /api/v1/users/:id')
  t.equal(request?.spanContext().traceId, callersTrace, 'in the caller\'s trace')
  t.match(request?.attributes, { 'http.request.method': 'GET', 'http.route': '/api/v1/users/:id', 'http.response.status_code': 200 })
  const statements = statementSpans(spans)
  t.ok(statements.length > 0, 'the user was read')
  for (const statement of statements) {
    t.ok(request !== undefined && descends(statement, request, spans), `${statement.name} is within the request`)
    t.equal(statement.attributes['db.system.name'], 'postgresql')
  }

  exporter.reset()
  t.equal((await app.inject({ url: '/api/v1/nowhere' })).statusCode, 404)
  t.same(requestSpans(exporter.getFinishedSpans()).map((span) => [span.name, span.attributes['http.response.status_code']]), [['GET', 404]], 'no route: named by the method')
})

t.test('a GraphQL query: an operation span under the request span, its statements under it', async (t) => {
  const app = await build(t, { tracing: true })
  const user = await signUp(app)
  const headers = await authHeaders(app, { id: user.id })
  exporter.reset()
  const answer = await graphql(app, 'query Users($n: Int) { users(limit: $n) { id name posts(limit: 2) { title } } }', { variables: { n: 5 }, headers })
  t.same(answer.errors, undefined)

  const spans = exporter.getFinishedSpans()
  const [request] = requestSpans(spans)
  t.equal(request?.name, 'POST /graphql')
  const [operation, ...others] = operationSpans(spans)
  t.same(others, [], 'one operation span')
  t.equal(operation?.name, 'query Users')
  t.match(operation?.attributes, { 'graphql.operation.type': 'query', 'graphql.operation.name': 'Users' })
  t.equal(operation?.parentSpanContext?.spanId, request === undefined ? 'none' : idOf(request), 'child of the request span')
  t.equal(operation?.status.code, SpanStatusCode.UNSET)
  const statements = statementSpans(spans)
  t.ok(statements.length > 0, 'the users were read')
  for (const statement of statements) {
    t.ok(operation !== undefined && descends(statement, operation, spans), `${statement.name} is within the operation`)
  }
})

t.test('an anonymous operation is named by its type; of several, the one operationName asks for', async (t) => {
  const app = await build(t, { tracing: true })
  const headers = await authHeaders(app)
  exporter.reset()
  await graphql(app, '{ users(limit: 1) { id } }', { headers })
  await graphql(app, 'query A { users(limit: 1) { id } } query B { user(id: "1") { id } }', { headers, operationName: 'B' })
  t.same(operationSpans(exporter.getFinishedSpans()).map((span) => span.name), ['query', 'query B'])
})

t.test('GraphQL errors are recorded on the operation span', async (t) => {
  const app = await build(t, { tracing: true })
  exporter.reset()
  const refused = await graphql(app, 'query Everyone { users { id } }')
  t.equal(refused.errors?.[0]?.extensions?.code, 'UNAUTHENTICATED')
  const [operation] = operationSpans(exporter.getFinishedSpans())
  t.equal(operation?.name, 'query Everyone')
  t.equal(operation?.status.code, SpanStatusCode.ERROR)
  t.match(operation?.events, [{ name: 'exception', attributes: { 'exception.type': 'UNAUTHENTICATED' } }])

  exporter.reset()
  const invalid = await graphql(app, '{ nope }')
  t.equal(invalid.errors?.[0]?.extensions?.code, 'GRAPHQL_VALIDATION_FAILED')
  const [refusedOperation] = operationSpans(exporter.getFinishedSpans())
  t.equal(refusedOperation?.name, 'GraphQL Operation', 'refused before its operation was known')
  t.equal(refusedOperation?.status.code, SpanStatusCode.ERROR)
  t.match(refusedOperation?.events, [{ name: 'exception', attributes: { 'exception.type': 'MER_ERR_GQL_VALIDATION' } }])
})

t.test('regression: GraphQL errors were recorded with their messages, which quote the variables and literals refused', async (t) => {
  const app = await build(t, { tracing: true })
  const password = 'Quoted-By-Graphql-Js-7'
  exporter.reset()
  const refused = await graphql(app, 'mutation SignUp ($i: CreateUserInput!) { createUser(input: $i) { id } }',
    { variables: { i: { name: 'Eve', email: 'eve@example.com', password, role: 'admin' } } })
  t.equal(refused.errors?.[0]?.extensions?.code, 'BAD_USER_INPUT')
  await graphql(app, `{ users(limit: "${password}") { id } }`)
  await graphql(app, `mutation { login(email: "eve@example.com" password "${password}") { accessToken } }`)
  const spans = exporter.getFinishedSpans()
  t.equal(operationSpans(spans).length, 3)
  t.same(spans.filter((span) => JSON.stringify({ name: span.name, attributes: span.attributes, events: span.events, status: span.status }).includes(password)).map((span) => span.name), [],
    'no span holds the value')
  t.same(spans.filter((span) => span.status.message !== undefined).map((span) => span.name), [], 'no status has a description')
  t.ok(spans.some((span) => span.status.code === SpanStatusCode.ERROR))
})

t.test('statement spans carry the parameterized SQL, never the values', async (t) => {
  const app = await build(t, { tracing: true })
  const email = 'traced.values@example.com'
  const password = 'a password nobody traces'
  exporter.reset()
  const first = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'Traced Values', email, password } })
  t.equal(first.statusCode, 201)
  const again = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'Traced Values', email, password } })
  t.equal(again.statusCode, 409)

  const spans = exporter.getFinishedSpans()
  const inserts = statementSpans(spans).filter((span) => /^insert into "users"/i.test(String(span.attributes['db.query.text'])))
  t.equal(inserts.length, 2, 'both sign-ups inserted')
  t.match(inserts[0]?.attributes['db.query.text'], /\$1/, 'the values are parameters')
  t.equal(inserts[1]?.status.code, SpanStatusCode.ERROR, 'the duplicate failed')
  const everything = JSON.stringify(spans.map((span) => ({ name: span.name, attributes: span.attributes, events: span.events, status: span.status })))
  for (const value of [email, password, 'Traced Values']) t.notOk(everything.includes(value), `no span holds ${value}`)
})

t.test('regression: a failed statement\'s span held PostgreSQL\'s message, which quotes the value it could not read', async (t) => {
  const app = await build(t, { tracing: true })
  const value = 'Not-A-Number-Secret-3'
  exporter.reset()
  // Inside a span, as a request's statements run (statements outside any make none).
  await app.tandemTracer.startActiveSpan('a request', async (span) => {
    await t.rejects(sql`select ${value}::int as n`.execute(app.db), /invalid input syntax/)
    span.end()
  })
  const [failed, ...others] = statementSpans(exporter.getFinishedSpans()).filter((span) => span.status.code === SpanStatusCode.ERROR)
  t.same(others, [])
  t.match(failed?.events, [{ name: 'exception', attributes: { 'exception.type': '22P02' } }], 'recorded by its SQLSTATE')
  t.equal(failed?.status.message, undefined)
  t.notOk(JSON.stringify(exporter.getFinishedSpans().map((span) => ({ attributes: span.attributes, events: span.events, status: span.status }))).includes(value), 'no span holds the value')
})

t.test('spans made through Tandem\'s tracers redact what libraries would set', async (t) => {
  const app = await build(t, { tracing: true })
  const secret = 'Set-By-A-Library-5'
  exporter.reset()
  const span = app.tandemTracer.startSpan('library', { attributes: { 'url.path': `/x?password=${secret}&page=2`, 'db.postgresql.values': [secret] } })
  span.setAttribute('url.full', `http://h/x?token=${secret}`)
  span.setAttributes({ 'graphql.document': `{ login(password: "${secret}") }`, 'db.query.parameter.0': secret, kept: 'kept' })
  span.addEvent('exception', { 'exception.type': 'E', 'exception.message': secret, 'exception.stacktrace': `Error: ${secret}\n    at f (file.js:1:1)` })
  span.recordException(new Error(`bad value ${secret}`))
  span.recordException(secret)
  span.setStatus({ code: SpanStatusCode.ERROR, message: secret })
  span.end()
  const [done] = exporter.getFinishedSpans()
  t.same(done?.attributes, { 'url.path': '/x', 'url.query': 'password=[redacted]&page=2', 'url.full': 'http://h/x?token=[redacted]', kept: 'kept' })
  t.same(done?.status, { code: SpanStatusCode.ERROR })
  t.match(done?.events.map((event) => event.attributes), [
    { 'exception.type': 'E', 'exception.stacktrace': '    at f (file.js:1:1)' },
    { 'exception.type': 'Error', 'exception.message': 'Error' },
    { 'exception.type': 'Error', 'exception.message': 'Error' }
  ])
  t.notOk(JSON.stringify(done?.events).includes(secret))
})

t.test('a provider of the application\'s own, passed as `tracing`, gets the spans', async (t) => {
  const own = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(own)] })
  const app = await build(t, { tracing: provider })
  exporter.reset()
  await graphql(app, 'query Mine { users { id } }', { headers: await authHeaders(app) })
  t.same(requestSpans(own.getFinishedSpans()).map((span) => span.name), ['POST /graphql'])
  t.same(operationSpans(own.getFinishedSpans()).map((span) => span.name), ['query Mine'])
  t.same(requestSpans(exporter.getFinishedSpans()), [], 'none through the global provider')
})

t.test('registered by the application before `tandem`, tracing is not registered twice', async (t) => {
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  t.teardown(() => app.close())
  await app.register(tracing)
  await app.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET, tracing: true })
  exporter.reset()
  t.equal((await app.inject({ url: '/health' })).statusCode, 200)
  t.same(requestSpans(exporter.getFinishedSpans()).map((span) => span.name), ['GET /health'])
})

t.test('otelExporterOtlpEndpoint turns tracing on through the global provider; `tracing: false` keeps it off', async (t) => {
  const on = await build(t, { otelExporterOtlpEndpoint: 'http://127.0.0.1:4318' })
  exporter.reset()
  await on.inject({ url: '/health' })
  t.same(requestSpans(exporter.getFinishedSpans()).map((span) => span.name), ['GET /health'])

  const off = await build(t, { otelExporterOtlpEndpoint: 'http://127.0.0.1:4318', tracing: false })
  exporter.reset()
  await off.inject({ url: '/health' })
  t.same(exporter.getFinishedSpans(), [])
})

t.test('with tracing off nothing is registered and no span is made', async (t) => {
  const app = await build(t)
  t.notOk(app.hasPlugin('@fastify/otel'), 'no request instrumentation')
  t.notOk(app.hasDecorator('tandemTracer'), 'no tracer for operations and statements')
  const user = await signUp(app)
  const headers = await authHeaders(app, { id: user.id })
  exporter.reset()
  t.equal((await app.inject({ url: `/api/v1/users/${user.id}`, headers })).statusCode, 200)
  t.same((await graphql(app, 'query Users { users { id } }', { headers })).errors, undefined)
  t.same(exporter.getFinishedSpans(), [])
})
