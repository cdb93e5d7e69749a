import { once } from 'node:events'
import { buildSchema } from 'graphql'
import t, { type Test } from 'tap'
import WebSocket from 'ws'
import { MAX_VARIABLE_DEPTH, MAX_VARIABLE_ERRORS, VariableCheck, jsonBytes } from '../../graphql/variables.js'
import { body, build, errorCodes, graphql, signedIn, type AuthHeaders, type GraphqlResponse } from '../helpers/app.js'
import { listening } from '../helpers/subscriptions.js'

const CREATE_USER = 'mutation ($i: CreateUserInput!) { createUser(input: $i) { id } }'
/** An object of `n` fields no input type has, each holding `value`. */
const unknownFields = (n: number, value: unknown = 'x'): Record<string, unknown> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, value]))
/** The most errors a refusal of variables holds: the cap, and one saying there were more. */
const MOST_ERRORS = MAX_VARIABLE_ERRORS + 1

/** What every answer to bad variables must be: a few coded errors, small, quoting nothing sent. */
function assertBounded (t: Test, res: { statusCode: number, body: string }, quoted: readonly string[], label: string): boolean {
  const answer = JSON.parse(res.body) as GraphqlResponse
  const errors = answer.errors ?? []
  const ok = [
    t.equal(res.statusCode, 200, `${label}: status`),
    t.ok(errors.length >= 1 && errors.length <= MOST_ERRORS, `${label}: 1 to ${MOST_ERRORS} errors, got ${errors.length}`),
    t.same([...new Set(errorCodes(answer))], ['BAD_USER_INPUT'], `${label}: codes`),
    t.ok(res.body.length < 8 * 1024, `${label}: a small answer, got ${res.body.length} bytes`),
    t.notOk(quoted.some((text) => res.body.includes(text)), `${label}: no value or key sent is quoted`)
  ]
  return ok.every(Boolean)
}

t.test('regression: a variable of 40,000 unknown fields got one error per field, each quoting the whole value; graphql-jit then never answered', async (t) => {
  const app = await build(t)
  const payload = JSON.stringify({ query: CREATE_USER, variables: { i: { name: 'n', email: 'bomb@example.com', ...unknownFields(40_000, 'bomb-value') } } })
  t.ok(payload.length < 1024 * 1024, 'under the body limit')
  // graphql-jit compiles the document on its 11th run (jit: 10) and then coerces variables itself.
  for (let n = 1; n <= 12; n++) {
    const res = await app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json' }, payload })
    if (!assertBounded(t, res, ['bomb-value', 'f39999'], `bomb ${n}`)) break
  }
  const users = await app.db.selectFrom('users').select('id').where('email', '=', 'bomb@example.com').execute()
  t.same(users, [], 'nothing written')
  const fine = await graphql(app, CREATE_USER, { variables: { i: { name: 'After', email: 'after-bomb@example.com' } } })
  t.same(fine.errors, undefined, 'the same document still runs with good variables (compiled by then)')
  t.ok(fine.data?.createUser?.id)
})

t.test('errors of variables quote no value and no long key, and name where they are', async (t) => {
  const app = await build(t)
  const login = 'mutation ($e: String!, $p: String!) { login(email: $e, password: $p) { accessToken } }'
  const number = await app.inject({ method: 'POST', url: '/graphql', payload: { query: login, variables: { e: 'who@example.com', p: 31415926535 } } })
  assertBounded(t, number, ['31415926535'], 'a password sent as a number')
  t.match(body<GraphqlResponse>(number).errors, [{ message: /"\$p".*string/, extensions: { field: 'p' } }])

  const list = await app.inject({ method: 'POST', url: '/graphql', payload: { query: CREATE_USER, variables: { i: { name: 'n', email: 'list@example.com', password: ['SECRET-PASSWORD-1'] } } } })
  assertBounded(t, list, ['SECRET-PASSWORD-1'], 'a list for a string')
  t.match(body<GraphqlResponse>(list).errors, [{ extensions: { field: 'i.password' } }])

  const longKey = 'k'.repeat(5000)
  const key = await app.inject({ method: 'POST', url: '/graphql', payload: { query: CREATE_USER, variables: { i: { name: 'n', email: 'key@example.com', [longKey]: 1 } } } })
  assertBounded(t, key, ['kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk'], 'a long unknown key')
  t.match(body<GraphqlResponse>(key).errors, [{ message: /a field is not defined by type "CreateUserInput"/ }])

  const missing = await graphql(app, CREATE_USER, { variables: { i: { name: 'n', nickname: 'x' } } })
  t.same(missing.errors?.map((e) => [e.extensions?.code, e.extensions?.field]), [['BAD_USER_INPUT', 'i'], ['BAD_USER_INPUT', 'i.email']], 'an unknown field, then a missing required one')
  t.match(missing.errors, [{ message: /field "nickname" is not defined by type "CreateUserInput"/ }, { message: /required field "email"/ }])
  t.notMatch(JSON.stringify(missing.errors), /Did you mean/, 'no suggestion names a field')

  const absent = await graphql(app, CREATE_USER)
  t.match(absent.errors, [{ message: 'Variable "$i" of required type "CreateUserInput!" was not provided.', extensions: { code: 'BAD_USER_INPUT' } }])
  const nulled = await graphql(app, CREATE_USER, { variables: { i: null } })
  t.match(nulled.errors, [{ message: /must not be null/, extensions: { code: 'BAD_USER_INPUT' } }])
})

t.test('variables larger than graphqlMaxVariablesBytes are refused before anything reads them', async (t) => {
  const app = await build(t, { graphqlMaxVariablesBytes: 4096 })
  const over = await app.inject({ method: 'POST', url: '/graphql', payload: { query: CREATE_USER, variables: { i: { name: 'x'.repeat(5000), email: 'big@example.com' } } } })
  assertBounded(t, over, ['xxxxxxxxxx'], 'over the bound')
  t.match(body<GraphqlResponse>(over).errors, [{ message: /larger than 4096 bytes/, extensions: { code: 'BAD_USER_INPUT', maximum: 4096 } }])
  t.equal(body<GraphqlResponse>(over).errors?.length, 1)
  // Unused variables count too: the bound is on what is sent.
  const unused = await graphql(app, '{ __typename }', { variables: { filler: 'x'.repeat(5000) } })
  t.same(errorCodes(unused), ['BAD_USER_INPUT'])
  const under = await graphql(app, CREATE_USER, { variables: { i: { name: 'x'.repeat(150), email: 'under@example.com' } } })
  t.same(under.errors, undefined, 'under the bound it runs')

  await t.rejects(build(t, { graphqlMaxVariablesBytes: 10 }), /graphqlMaxVariablesBytes must be >= 1024/)
})

t.test('bad variables are refused alike over GET and in persisted queries', async (t) => {
  const app = await build(t)
  const user = await signedIn(app)
  const query = 'query ($c: String) { products(category: $c) { id } }'
  const variables = JSON.stringify({ c: unknownFields(400, 'get-value') })
  const get = await app.inject({ url: `/graphql?query=${encodeURIComponent(query)}&variables=${encodeURIComponent(variables)}`, headers: user.headers })
  assertBounded(t, get, ['get-value', 'f399'], 'GET')

  const document = 'mutation ($i: CreateUserInput!) { createUser(input: $i) { id name } }'
  const sha256Hash = await app.tandemGraphql.persist(document)
  const persisted = await app.inject({
    method: 'POST',
    url: '/graphql',
    payload: { extensions: { persistedQuery: { version: 1, sha256Hash } }, variables: { i: { name: 'n', email: 'apq@example.com', ...unknownFields(2000, 'apq-value') } } }
  })
  assertBounded(t, persisted, ['apq-value', 'f1999'], 'persisted query')
  const good = await app.inject({ method: 'POST', url: '/graphql', payload: { extensions: { persistedQuery: { version: 1, sha256Hash } }, variables: { i: { name: 'Persisted', email: 'apq-ok@example.com' } } } })
  t.same(body<GraphqlResponse>(good).data, { createUser: { id: body<GraphqlResponse>(good).data?.createUser?.id, name: 'Persisted' } })
})

interface Message { type: string, id?: string, payload?: unknown }

/** A graphql-transport-ws socket, initialised; `answer(id)` is the first message for that id. */
async function socketOf (t: Test, url: string, headers: AuthHeaders): Promise<{ send: (message: Message) => void, answer: (id: string) => Promise<Message> }> {
  const socket = new WebSocket(url, 'graphql-transport-ws')
  t.teardown(() => socket.close())
  const messages: Message[] = []
  const waiters: Array<() => void> = []
  socket.on('message', (data: Buffer) => { messages.push(JSON.parse(data.toString()) as Message); for (const wake of waiters.splice(0)) wake() })
  const next = async (accept: (m: Message) => boolean): Promise<Message> => {
    const deadline = Date.now() + 10_000
    for (;;) {
      const found = messages.find(accept)
      if (found !== undefined) return found
      if (Date.now() > deadline) throw new Error(`no such message; got ${JSON.stringify(messages).slice(0, 300)}`)
      await new Promise<void>((resolve) => { const timer = setTimeout(resolve, 200); waiters.push(() => { clearTimeout(timer); resolve() }) })
    }
  }
  await once(socket, 'open')
  const send = (message: Message) => { socket.send(JSON.stringify(message)) }
  send({ type: 'connection_init', payload: headers })
  await next((m) => m.type === 'connection_ack')
  return { send, answer: async (id) => next((m) => m.id === id && (m.type === 'error' || m.type === 'next')) }
}

t.test('bad variables of a subscription are refused before Mercurius sees them, even under an id in use', async (t) => {
  const { app, url } = await listening(t)
  const user = await signedIn(app)
  const socket = await socketOf(t, url, user.headers)
  const query = 'subscription ($p: ID!) { commentAdded(postId: $p) { id } }'
  const bomb = { p: unknownFields(3000, 'ws-value') }

  socket.send({ type: 'subscribe', id: 'bomb', payload: { query, variables: bomb } })
  const refused = await socket.answer('bomb')
  t.equal(refused.type, 'error')
  const text = JSON.stringify(refused)
  t.ok(text.length < 2048, `a small answer, got ${text.length} bytes`)
  t.notOk(text.includes('ws-value') || text.includes('f2999'), 'nothing sent is quoted')
  t.match(refused.payload, [{ message: /"\$p".*a string, or an integer/, extensions: { code: 'BAD_USER_INPUT', field: 'p' } }])

  // A second subscribe reusing an open subscription's id reaches Mercurius: it is checked all the same.
  socket.send({ type: 'subscribe', id: 'same', payload: { query, variables: { p: '1' } } })
  await new Promise((resolve) => setTimeout(resolve, 300))
  socket.send({ type: 'subscribe', id: 'same', payload: { query, variables: bomb } })
  const again = await socket.answer('same')
  t.equal(again.type, 'error')
  t.ok(JSON.stringify(again).length < 2048, 'a small answer')
  t.match(again.payload, [{ extensions: { code: 'BAD_USER_INPUT' } }])
})

t.test('the check of variables against their types', async (t) => {
  const schema = buildSchema(`
    enum Colour { RED GREEN }
    scalar Even
    input Pick @oneOf { a: Int, b: String }
    input Node { value: Int!, colour: Colour = RED, next: Node }
    type Query { x(n: Node, p: Pick, e: Even, l: [[Int!]]): Int }
  `)
  const even = schema.getType('Even') as { parseValue: (v: unknown) => unknown }
  even.parseValue = (v) => { if (typeof v !== 'number' || v % 2 !== 0) throw new Error(`odd: ${String(v)}`); return v }
  const check = new VariableCheck({ maxBytes: 64 * 1024 })
  const query = 'query ($n: Node, $p: Pick, $e: Even, $l: [[Int!]]) { x(n: $n, p: $p, e: $e, l: $l) }'
  const fields = (variables: Record<string, unknown>) => check.check(schema, query, variables, undefined)?.map((e) => e.extensions.field ?? '(more)')

  t.equal(fields({ n: { value: 1, colour: 'GREEN', next: { value: 2 } }, p: { b: 's' }, e: 4, l: [[1, 2], 3] }), undefined, 'good values, a list of one given as its item')
  t.same(fields({ n: { value: 1, colour: 'BLUE' } }), ['n.colour'], 'an enum value it lacks')
  t.same(fields({ p: { a: 1, b: 's' } }), ['p'], 'a oneOf input with two fields')
  t.same(fields({ e: 3 }), ['e'], 'a scalar of the schema: its parseValue decides')
  t.same(fields({ l: [[1, null], ['x']] }), ['l[0][1]', 'l[1][0]'])
  t.same(fields({ n: { next: { value: 'x' } } }), ['n.value', 'n.next.value'], 'a required field missing, a string for an Int')
  let deep: Record<string, unknown> = { value: 1 }
  for (let i = 0; i < MAX_VARIABLE_DEPTH + 5; i++) deep = { value: 1, next: deep }
  t.same(fields({ n: deep })?.length, 1, 'nested past MAX_VARIABLE_DEPTH: one error')
  const many = fields({ l: Array.from({ length: 1000 }, () => ['x']) })
  t.equal(many?.length, MOST_ERRORS, 'the errors stop at the cap')
  t.equal(many?.at(-1), '(more)')
  t.equal(check.check(schema, query, {}, undefined), undefined, 'no variables: nothing to check')
  t.equal(check.check(schema, 'query ($n: Node { x }', { n: 1 }, undefined), undefined, 'a document that does not parse is left to graphql-js')

  t.equal(jsonBytes({ a: [1, 'é', null, true] }, 1000), JSON.stringify({ a: [1, 'é', null, true] }).length + 1, 'about the JSON text in UTF-8')
  let nested: unknown = 1
  for (let i = 0; i < 100_000; i++) nested = [nested]
  t.equal(jsonBytes(nested, 1000), 1001, 'stops past the limit, whatever the depth')
})
