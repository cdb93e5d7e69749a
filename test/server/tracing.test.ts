// The server process with OTEL_EXPORTER_OTLP_ENDPOINT set sends its traces to that OTLP/HTTP
// collector (here one of the test's own), on the embedded database and, with DATABASE_URL, on a real
// server through @opentelemetry/instrumentation-pg.
import { once } from 'node:events'
import { createServer } from 'node:http'
import t from 'tap'
import { serverUrl, type Test } from '../helpers/database.js'
import { freshDatabase, startServer } from '../helpers/processes.js'

interface OtlpValue { stringValue?: string, intValue?: number | string }
interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes?: Array<{ key: string, value: OtlpValue }>
}
/** OTLP's `SPAN_KIND_SERVER`. */
const SERVER = 2
interface OtlpExport { resourceSpans: Array<{ resource?: { attributes?: OtlpSpan['attributes'] }, scopeSpans: Array<{ spans: OtlpSpan[] }> }> }

/** An OTLP/HTTP collector on a free local port: the spans of every export it receives. */
async function collector (t: Test): Promise<{ url: string, spans: OtlpSpan[], paths: string[], services: Set<string | undefined> }> {
  const spans: OtlpSpan[] = []
  const services = new Set<string | undefined>()
  const paths: string[] = []
  const server = createServer((request, response) => {
    let text = ''
    request.on('data', (chunk: Buffer) => { text += chunk.toString() })
    request.on('end', () => {
      paths.push(request.url ?? '')
      for (const resource of (JSON.parse(text) as OtlpExport).resourceSpans) {
        services.add(resource.resource?.attributes?.find((a) => a.key === 'service.name')?.value?.stringValue)
        for (const scope of resource.scopeSpans) spans.push(...scope.spans)
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const address = server.address()
  return { url: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`, spans, paths, services }
}

const attribute = (span: OtlpSpan | undefined, key: string): string | number | undefined => {
  const value = span?.attributes?.find((a) => a.key === key)?.value
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue))
}

/** Whether `ancestor` is `span`'s parent, or its parent's parent, and so on. */
function descends (span: OtlpSpan, ancestor: OtlpSpan | undefined, spans: OtlpSpan[]): boolean {
  const byId = new Map(spans.map((s) => [s.spanId, s]))
  for (let parent = span.parentSpanId; parent !== undefined && parent !== ''; parent = byId.get(parent)?.parentSpanId) {
    if (parent === ancestor?.spanId) return true
  }
  return false
}

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
