// The server process with OTEL_EXPORTER_OTLP_ENDPOINT set sends its traces to that OTLP/HTTP
// collector (here one of the test's own), on the embedded database and, with DATABASE_URL, on a real
// server through @opentelemetry/instrumentation-pg.
import t from 'tap'
import { attribute, collector, descends, SERVER } from '../helpers/collector.js'
import { serverUrl } from '../helpers/database.js'
import { freshDatabase, startServer } from '../helpers/processes.js'

t.test('with OTEL_EXPORTER_OTLP_ENDPOINT the server exports its requests, operations and statements', async (t) => {
  const otlp = await collector(t)
  const database = serverUrl()
  const server = await startServer(t, {
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_SERVICE_NAME: 'orders-api',
    ...(database === undefined ? {} : { DATABASE_URL: await freshDatabase(t, database) })
  })
  t.equal((await fetch(`${server.url}/api/v1/products?limit=2`)).status, 200)
  const login = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    // A demo user (the server loads the demo data into its empty database).
    body: JSON.stringify({ query: 'mutation LogIn { login(email: "ada@example.com", password: "tandem-demo") { accessToken } }' })
  })
  t.equal(login.status, 200)
  t.type((await login.json() as { data?: { login?: { accessToken?: unknown } } }).data?.login?.accessToken, 'string')

  // Secrets in a query string and in a variable graphql-js refuses (quoting it whole) stay out of the spans.
  const secret = 'Server-Side-Secret-Wxyz'
  t.equal((await fetch(`${server.url}/api/v1/products?token=${secret}`)).status, 400)
  const refused = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: 'mutation ($i: CreateUserInput!) { createUser(input: $i) { id } }', variables: { i: { name: 'x', email: 'x@example.com', password: secret, role: 'admin' } } })
  })
  t.equal(refused.status, 200)

  // The spans still batched are sent as the server shuts down.
  server.child.kill('SIGTERM')
  t.equal((await server.exited).code, 0)
  t.ok(otlp.paths.length > 0 && otlp.paths.every((path) => path === '/v1/traces'), 'sent to the endpoint\'s traces path')
  t.same([...otlp.services], ['orders-api'], 'the service is named by OTEL_SERVICE_NAME')

  const { spans } = otlp
  const products = spans.find((span) => span.name === 'GET /api/v1/products')
  t.equal(attribute(products, 'http.route'), '/api/v1/products')
  t.equal(attribute(products, 'http.response.status_code'), 200)
  const request = spans.find((span) => span.name === 'POST /graphql')
  const operation = spans.find((span) => span.name === 'mutation LogIn')
  t.equal(attribute(operation, 'graphql.operation.name'), 'LogIn')
  t.equal(operation?.parentSpanId, request?.spanId, 'the operation is a child of its request')

  t.notOk(otlp.bodies.join('\n').includes(secret), 'no span holds a secret the clients sent')

  const statements = spans.filter((span) => attribute(span, 'db.query.text') !== undefined)
  // On a real server the spans are instrumentation-pg's; on the embedded database, Tandem's own.
  const driver = database === undefined ? /^pglite\.query:[A-Z]+$/ : /^pg\.query:[A-Z]+ tandem_proc_/
  t.ok(statements.length > 0)
  for (const statement of statements) t.match(statement.name, driver)
  t.ok(statements.some((statement) => descends(statement, products, spans)), 'the products were read within their request')
  t.ok(statements.some((statement) => descends(statement, operation, spans)), 'the login read its user within its operation')
  const requests = spans.filter((span) => span.kind === SERVER)
  t.ok(statements.every((statement) => requests.some((request) => descends(statement, request, spans))),
    'statements outside requests (migrations, demo data, housekeeping) made no spans')
})
