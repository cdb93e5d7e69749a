// Spans carry no secret (issue 37, finding 4): every span of a run of sign-ups, logins, password
// resets, email changes, failing GraphQL inputs and secrets in query strings, as `npm start`'s SDK
// posts them to an OTLP collector on loopback, holds nothing of what the clients sent as a secret —
// in no attribute, event, exception, status, span name or resource.
import { randomInt } from 'node:crypto'
import t from 'tap'
import { attribute, collector, SERVER, type OtlpSpan } from '../helpers/collector.js'
import { startTracing } from '../../plugins/tracing-sdk.js'

// The server entry point's SDK with its own OTLP/HTTP exporter, which reads the endpoint from the
// environment; started before the helpers load `pg`, as server.ts does, so that on DATABASE_URL the
// statements' spans are @opentelemetry/instrumentation-pg's. The queue holds the whole run: no span is dropped.
const otlp = await collector(t)
process.env.OTEL_EXPORTER_OTLP_ENDPOINT = otlp.url
process.env.OTEL_BSP_MAX_QUEUE_SIZE = '100000'
const provider = startTracing()
t.teardown(() => provider.shutdown())
const { TEST_SECRET, body, build, graphql, login, signUp } = await import('../helpers/app.js')
const { openOutboxMessage } = await import('../../plugins/one-time-tokens.js')

// Letters that no hexadecimal trace or span id holds, so that a fragment found is a leak.
const LETTERS = 'ghjkmnpqrstvwxyzGHJKMNPQRSTVWXYZ'
const secrets = new Map<string, string>()
/** A secret of the run, remembered to be looked for. */
function secret (label: string): string {
  const value = `${label}-${Array.from({ length: 20 }, () => LETTERS[randomInt(LETTERS.length)]).join('')}`
  secrets.set(label, value)
  return value
}
/** The secret and every 8 characters of its random part: a quoted snippet counts too. */
function fragments (value: string): string[] {
  const random = value.slice(value.lastIndexOf('-') + 1)
  const windows = [value]
  for (let i = 0; i + 8 <= random.length; i++) windows.push(random.slice(i, i + 8))
  return windows
}

const gqlGet = (query: string, variables?: unknown) =>
  `/graphql?query=${encodeURIComponent(query)}${variables === undefined ? '' : `&variables=${encodeURIComponent(JSON.stringify(variables))}`}`

t.test('no secret a client sends reaches a span', async (t) => {
  const app = await build(t, { tracing: true })
  // Every request of the run, to check that each one's span reached the collector.
  let requests = 0
  const inject = app.inject.bind(app)
  app.inject = ((...args: Parameters<typeof inject>) => { requests++; return inject(...args) }) as typeof app.inject

  // Sign-ups, in both styles.
  const ada = await signUp(app, { email: 'ada.traced@example.com', password: secret('AdaPassword') })
  const bobPassword = secret('BobPassword')
  const bob = await graphql<{ createUser: { id: string } }>(app, 'mutation SignUp ($i: CreateUserInput!) { createUser(input: $i) { id } }',
    { variables: { i: { name: 'Bob', email: 'bob.traced@example.com', password: bobPassword } }, remoteAddress: '10.9.9.9' })
  t.same(bob.errors, undefined)
  const bobId = bob.data?.createUser.id ?? ''

  // Logins, right and wrong, in both styles, with the password as a variable and as a literal.
  let adaHeaders = await login(app, ada.email, ada.password)
  const adaToken = adaHeaders.authorization.slice('Bearer '.length)
  secrets.set('AdaAccessToken', adaToken)
  secrets.set('AdaTokenSignature', adaToken.split('.')[2] ?? adaToken)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: ada.email, password: secret('WrongLogin') } })).statusCode, 401)
  const bobLogin = await graphql<{ login: { accessToken: string } }>(app, 'mutation LogIn ($e: String!, $p: String!) { login(email: $e, password: $p) { accessToken } }',
    { variables: { e: 'bob.traced@example.com', p: bobPassword } })
  const bobToken = bobLogin.data?.login.accessToken ?? ''
  secrets.set('BobAccessToken', bobToken)
  const bobHeaders = { authorization: `Bearer ${bobToken}` }
  t.type((await graphql(app, `mutation { login(email: "bob.traced@example.com", password: "${bobPassword}") { accessToken } }`)).data?.login?.accessToken, 'string')
  t.match((await graphql(app, `mutation { login(email: "bob.traced@example.com", password: "${secret('WrongLiteral')}") { accessToken } }`)).errors, [{ extensions: { code: 'UNAUTHENTICATED' } }])

  // A password reset, the whole flow: ask for the token, read it from the outbox, use it.
  t.equal((await app.inject({ method: 'POST', url: `/api/v1/users/${ada.id}/reset-password`, headers: adaHeaders })).statusCode, 202)
  const mail = await app.db.selectFrom('email_outbox').selectAll().where('kind', '=', 'reset_password').orderBy('id', 'desc').executeTakeFirstOrThrow()
  const resetToken = /^([A-Za-z0-9_-]{43})$/m.exec(openOutboxMessage(mail, TEST_SECRET))?.[1] ?? ''
  t.equal(resetToken.length, 43, 'the token was mailed')
  secrets.set('ResetToken', resetToken)
  const newPassword = secret('ResetPassword')
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token: resetToken, password: newPassword } })).statusCode, 204)
  const forged = Array.from({ length: 43 }, () => LETTERS[randomInt(LETTERS.length)]).join('')
  secrets.set('ForgedResetToken', forged)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token: forged, password: secret('ForgedPassword') } })).statusCode, 400)
  adaHeaders = await login(app, ada.email, newPassword)

  // Email changes with current_password, right and wrong, in both styles.
  const patch = (payload: object) => app.inject({ method: 'PATCH', url: `/api/v1/users/${ada.id}`, headers: adaHeaders, payload })
  t.equal((await patch({ email: 'ada.wrong@example.com', current_password: secret('WrongCurrent') })).statusCode, 403)
  t.equal((await patch({ email: 'ada.moved@example.com', current_password: newPassword })).statusCode, 200)
  const moved = await graphql(app, 'mutation Move ($id: ID!, $i: UpdateUserInput!) { updateUser(id: $id, input: $i) { email } }',
    { headers: bobHeaders, variables: { id: bobId, i: { email: 'bob.moved@example.com', current_password: bobPassword } } })
  t.same(moved.errors, undefined)
  t.match((await graphql(app, `mutation { updateUser(id: "${bobId}", input: { email: "bob.x@example.com", current_password: "${secret('WrongCurrentLiteral')}" }) { email } }`, { headers: bobHeaders })).errors,
    [{ extensions: { code: 'FORBIDDEN' } }])

  // Failing GraphQL inputs: variables that do not fit their types, whose errors may quote them whole.
  const unknownField = await graphql(app, 'mutation SignUp ($i: CreateUserInput!) { createUser(input: $i) { id } }',
    { variables: { i: { name: 'Eve', email: 'eve.traced@example.com', password: secret('BadVariablePassword'), role: 'admin' } } })
  t.match(unknownField.errors, [{ extensions: { code: 'BAD_USER_INPUT' } }])
  const badChange = await graphql(app, 'mutation Move ($id: ID!, $i: UpdateUserInput!) { updateUser(id: $id, input: $i) { email } }',
    { headers: bobHeaders, variables: { id: bobId, i: { email: 'bob.y@example.com', current_password: secret('BadVariableCurrent'), role: 'admin' } } })
  t.match(badChange.errors, [{ extensions: { code: 'BAD_USER_INPUT' } }])
  t.match((await graphql(app, `mutation { login(email: "bob.traced@example.com" password "${secret('SyntaxErrorPassword')}") { accessToken } }`)).errors,
    [{ extensions: { code: 'GRAPHQL_PARSE_FAILED' } }])
  t.ok((await graphql(app, `{ users(limit: "${secret('LiteralOfWrongType')}") { id } }`, { headers: bobHeaders })).errors?.length)
  // And in the URL of a GET /graphql: a query's variables, its literals, a mutation (refused with 405).
  const getVariables = await app.inject({ url: gqlGet('query One ($i: ID!) { user(id: $i) { id } }', { i: { password: secret('GetVariablePassword') } }), headers: bobHeaders })
  t.match(body(getVariables), { errors: [{ extensions: { code: 'BAD_USER_INPUT' } }] })
  t.equal((await app.inject({ url: gqlGet(`{ users(limit: "${secret('GetLiteral')}") { id } }`), headers: bobHeaders })).statusCode, 200)
  t.equal((await app.inject({ url: gqlGet(`mutation { login(email: "a@example.com", password: "${secret('GetMutationPassword')}") { accessToken } }`) })).statusCode, 405)

  // REST requests with secrets in the query string, on routes that refuse them, ignore them or do not exist.
  t.equal((await app.inject({ url: `/api/v1/products?token=${secret('QueryToken')}&limit=1` })).statusCode, 400)
  t.equal((await app.inject({ url: `/api/v1/users?access_token=${secret('QueryAccessToken')}`, headers: adaHeaders })).statusCode, 400)
  t.equal((await app.inject({ url: `/api/v1/nowhere?password=${secret('QueryPassword')}` })).statusCode, 404)
  t.equal((await app.inject({ url: `/health?secret=${secret('QuerySecret')}` })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: `/api/v1/auth/login?api_key=${secret('QueryApiKey')}`, payload: { email: ada.email, password: newPassword } })).statusCode, 400)
  // A body that is not JSON, and one that fails its schema, each with a password in it.
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/login', headers: { 'content-type': 'application/json' }, payload: `{"email":"${ada.email}","password":"${secret('MalformedBody')}" oops` })).statusCode, 400)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: '', email: 'nobody@example.com', password: secret('InvalidBody') }, remoteAddress: '10.9.9.10' })).statusCode, 400)

  await provider.forceFlush()
  const spans: OtlpSpan[] = otlp.spans
  t.equal(spans.filter((span) => span.kind === SERVER).length, requests, 'the collector has every request\'s span')
  const ids = new Set(spans.map((span) => span.spanId))
  t.same(spans.filter((span) => span.parentSpanId !== undefined && span.parentSpanId !== '' && !ids.has(span.parentSpanId)).map((span) => span.name), [],
    'and every span\'s parent: no span of the run is missing')
  t.ok(spans.some((span) => attribute(span, 'db.query.text') !== undefined), 'statements were traced')

  const everything = otlp.bodies.join('\n')
  for (const [label, value] of secrets) {
    const found = fragments(value).filter((fragment) => everything.includes(fragment))
    t.same(found, [], `no span holds ${label}, nor a piece of it`)
  }

  // What spans still say: the path without its query, the query redacted as the log redacts it; codes, not messages.
  const products = spans.find((span) => span.name === 'GET /api/v1/products')
  t.equal(attribute(products, 'url.path'), '/api/v1/products')
  t.equal(attribute(products, 'url.query'), 'token=[redacted]&limit=1')
  const exceptions = spans.flatMap((span) => (span.events ?? []).filter((event) => event.name === 'exception').map((event) => ({ span: span.name, ...event })))
  t.ok(exceptions.some((event) => event.span === 'GraphQL Operation'), 'the refused operations recorded their errors')
  const sentences = exceptions.map((event) => [event.span, attribute(event, 'exception.type'), attribute(event, 'exception.message')])
    .filter(([, type, message]) => !/^[\w.$-]+$/.test(String(type)) || !/^[\w.$-]+$/.test(String(message)))
  t.same(sentences, [], 'every exception is recorded by its code and class, not by a message')
  t.same(spans.filter((span) => span.status?.message !== undefined && span.status.message !== '').map((span) => span.name), [], 'no status carries a description')
})
