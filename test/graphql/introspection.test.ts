import { once } from 'node:events'
import { getIntrospectionQuery } from 'graphql'
import t, { type Test } from 'tap'
import WebSocket from 'ws'
import type { TandemPluginOptions } from '../../app/tandem.js'
import { build, errorCodes, graphql, signedIn } from '../helpers/app.js'
import { listening } from '../helpers/subscriptions.js'

// Each misspelt: graphql-js suggests the right name ("Did you mean …?") of a field, an argument, a type.
const MISSPELT = ['{ users { nmae } }', '{ users(limt: 1) { id } }', 'query ($n: Itn) { users(limit: $n) { id } }']

/** What a client learns of the schema from errors and introspection, on a server built with `options`. */
async function schemaShown (t: Test, options: TandemPluginOptions) {
  const app = await build(t, options)
  const user = await signedIn(app)
  const introspection = await graphql(app, getIntrospectionQuery(), { headers: user.headers })
  const type = await graphql(app, '{ __type(name: "User") { fields { name } } }', { headers: user.headers })
  const typename = await graphql(app, '{ __typename }', { headers: user.headers })
  const misspelt = await Promise.all(MISSPELT.map(async (query) => graphql(app, query, { headers: user.headers })))
  return { app, user, introspection, type, typename, misspelt }
}

t.test('regression: introspection and "Did you mean" suggestions were on in production', async (t) => {
  const { introspection, type, typename, misspelt } = await schemaShown(t, { nodeEnv: 'production' })
  for (const [label, refused] of [['the introspection query', introspection], ['__type', type]] as const) {
    t.equal(refused.statusCode, 200, label)
    t.same([...new Set(errorCodes(refused))], ['INTROSPECTION_DISABLED'], label)
    t.match(refused.errors?.[0]?.message, /introspection is off.*GRAPHQL_INTROSPECTION/, label)
    t.notOk(refused.data, `${label}: nothing ran`)
  }
  t.same(typename.data, { __typename: 'Query' }, '__typename still answers')
  for (const [index, answer] of misspelt.entries()) {
    t.same(errorCodes(answer), ['GRAPHQL_VALIDATION_FAILED'], MISSPELT[index] as string)
    t.notMatch(answer.errors?.[0]?.message, /Did you mean/, `${MISSPELT[index] as string}: no suggestion`)
    t.match(answer.errors?.[0]?.message, /nmae|limt|Itn/, 'the error still says what is wrong')
  }
})

t.test('graphqlIntrospection turns both on in production; outside production they are on', async (t) => {
  for (const options of [{ nodeEnv: 'production', graphqlIntrospection: true }, {}] satisfies TandemPluginOptions[]) {
    const label = JSON.stringify(options)
    const { introspection, type, misspelt } = await schemaShown(t, options)
    t.same(introspection.errors, undefined, `${label}: the introspection query runs`)
    t.ok(introspection.data?.__schema.types.some((type: { name: string }) => type.name === 'User'), label)
    t.ok(type.data?.__type.fields.length > 0, label)
    t.match(misspelt[0]?.errors?.[0]?.message, /Did you mean "name"\?/, `${label}: a misspelt field is suggested`)
    t.match(misspelt[1]?.errors?.[0]?.message, /Did you mean "limit"\?/, `${label}: a misspelt argument`)
  }
  const off = await build(t, { graphqlIntrospection: false })
  t.same(errorCodes(await graphql(off, '{ __schema { queryType { name } } }')), ['INTROSPECTION_DISABLED'], 'and off anywhere when set so')
})

t.test('a misspelt field of a subscription gets no suggestion in production', async (t) => {
  const { app, url } = await listening(t, { nodeEnv: 'production' })
  const user = await signedIn(app)
  const socket = new WebSocket(url, 'graphql-transport-ws')
  t.teardown(() => socket.close())
  const messages: Array<{ type: string, id?: string, payload?: unknown }> = []
  socket.on('message', (data: Buffer) => { messages.push(JSON.parse(data.toString())) })
  await once(socket, 'open')
  socket.send(JSON.stringify({ type: 'connection_init', payload: user.headers }))
  while (!messages.some((m) => m.type === 'connection_ack')) await new Promise((resolve) => setTimeout(resolve, 50))
  socket.send(JSON.stringify({ type: 'subscribe', id: 'typo', payload: { query: 'subscription { postCreated { titel } }' } }))
  const deadline = Date.now() + 10_000
  let answer
  while ((answer = messages.find((m) => m.id === 'typo')) === undefined && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(answer?.type, 'error')
  t.match(answer?.payload, [{ message: /titel/, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }])
  t.notMatch(JSON.stringify(answer?.payload), /Did you mean/)
})
