import { createHash } from 'node:crypto'
import { once } from 'node:events'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import WebSocket from 'ws'
import type { TandemPluginOptions } from '../../app/tandem.js'
import { build, errorCodes, graphql, signedIn, type AuthHeaders } from '../helpers/app.js'

interface Test { teardown: (fn: () => unknown) => void }
interface Message { type: string, id?: string, payload?: unknown }
interface Closed { code: number, reason: string }

const KIB = 1024
/** A valid document padded with a comment to about `bytes` bytes: comments are no tokens, but they are bytes. */
const commented = (document: string, bytes: number): string => `${document} #${'x'.repeat(bytes)}`

async function listening (t: Test, options: TandemPluginOptions = {}): Promise<{ app: FastifyInstance, url: string }> {
  const app = await build(t, options)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return { app, url: `ws://127.0.0.1:${port}/graphql` }
}

/** A raw graphql-transport-ws socket: every message the server sent, and how it closed. */
class RawSocket {
  readonly messages: Message[] = []
  readonly closed: Promise<Closed>
  readonly #socket: WebSocket
  #waiters: Array<() => void> = []

  constructor (t: Test, url: string) {
    this.#socket = new WebSocket(url, 'graphql-transport-ws')
    t.teardown(() => this.#socket.close())
    this.closed = new Promise((resolve) => {
      this.#socket.once('close', (code, reason) => { resolve({ code, reason: reason.toString() }) })
    })
    this.#socket.on('message', (data: Buffer) => {
      this.messages.push(JSON.parse(data.toString()) as Message)
      for (const waiter of this.#waiters.splice(0)) waiter()
    })
  }

  async open (): Promise<this> {
    await once(this.#socket, 'open')
    return this
  }

  async init (headers: AuthHeaders): Promise<this> {
    await this.open()
    this.send({ type: 'connection_init', payload: headers })
    await this.next((m) => m.type === 'connection_ack')
    return this
  }

  send (message: Message): void { this.#socket.send(JSON.stringify(message)) }

  subscribe (id: string, query: string): void { this.send({ id, type: 'subscribe', payload: { query } }) }

  /** The first message `accept` takes, or a failure after a while rather than a hang. */
  async next (accept: (message: Message) => boolean): Promise<Message> {
    const deadline = Date.now() + 10_000
    for (;;) {
      const found = this.messages.find(accept)
      if (found !== undefined) return found
      if (Date.now() > deadline) throw new Error(`no such message; got ${JSON.stringify(this.messages).slice(0, 500)}`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 200)
        this.#waiters.push(() => { clearTimeout(timer); resolve() })
      })
    }
  }

  /** The error or the first data answering subscription `id`. */
  async answer (id: string): Promise<Message> {
    return this.next((m) => m.id === id && (m.type === 'error' || m.type === 'next'))
  }
}

/** Publishes harmless events until subscription `id` hears one: subscribing is asynchronous on the server. */
async function hears (app: FastifyInstance, socket: RawSocket, id: string): Promise<boolean> {
  const now = new Date()
  for (let attempt = 0; attempt < 50; attempt++) {
    await app.tandemEvents.publish('postCreated', { post: { id: 0, author_id: 1, title: 'probe', content: '', created_at: now, updated_at: now } })
    await new Promise((resolve) => setTimeout(resolve, 100))
    const answer = socket.messages.find((m) => m.id === id && (m.type === 'error' || m.type === 'next'))
    if (answer !== undefined) return answer.type === 'next'
  }
  return false
}

const errorCodesOf = (message: Message): unknown[] => (message.payload as Array<{ extensions?: { code?: string } }>).map((e) => e.extensions?.code)

t.test('regression: documents over 64 KiB were parsed and cached, comments included (HTTP)', async (t) => {
  const app = await build(t)
  const big = commented('{ __typename }', 70 * KIB)
  const post = await graphql(app, big)
  t.equal(post.statusCode, 200)
  t.same(errorCodes(post), ['GRAPHQL_PARSE_FAILED'])
  t.match(post.errors?.[0]?.message, /64 KiB/)
  t.notOk(post.data, 'nothing ran')

  const small = await graphql(app, commented('{ __typename }', 60 * KIB))
  t.same(small.data, { __typename: 'Query' }, 'a document under the limit runs, comments and all')
})

t.test('regression: WebSocket documents skipped the size and token limits', async (t) => {
  const { app, url } = await listening(t)
  const ann = await signedIn(app)
  const socket = await new RawSocket(t, url).init(ann.headers)

  socket.subscribe('big', commented('subscription { postCreated { id } }', 70 * KIB))
  const big = await socket.answer('big')
  t.equal(big.type, 'error')
  t.same(errorCodesOf(big), ['GRAPHQL_PARSE_FAILED'])

  // Valid, and under 64 KiB, but more tokens than MAX_DOCUMENT_TOKENS.
  socket.subscribe('tokens', `subscription { postCreated { ${'id '.repeat(6000)} } }`)
  const tokens = await socket.answer('tokens')
  t.equal(tokens.type, 'error')
  t.same(errorCodesOf(tokens), ['GRAPHQL_PARSE_FAILED'])
  t.match(tokens.payload, [{ message: /tokens/ }])

  socket.subscribe('fine', 'subscription { postCreated { id } }')
  t.ok(await hears(app, socket, 'fine'), 'the connection still serves')
})

t.test('regression: a WebSocket that never sent connection_init stayed open', async (t) => {
  const { url } = await listening(t, { graphql: { connectionInitWaitTimeout: 300 } })
  const socket = await new RawSocket(t, url).open()
  const stillOpen = new Promise((resolve) => setTimeout(() => resolve('still open'), 5000).unref())
  t.match(await Promise.race([socket.closed, stillOpen]), { code: 4408 })
})

t.test('regression: one WebSocket could hold any number of subscriptions', async (t) => {
  const { app, url } = await listening(t, { graphqlMaxSubscriptions: 3 })
  const bob = await signedIn(app)
  const socket = await new RawSocket(t, url).init(bob.headers)
  for (const id of ['1', '2', '3', '4']) socket.subscribe(id, 'subscription { postCreated { id } }')
  const refused = await socket.answer('4')
  t.equal(refused.type, 'error')
  t.same(errorCodesOf(refused), ['TOO_MANY_SUBSCRIPTIONS'])

  // Ending one makes room for another.
  socket.send({ id: '1', type: 'complete' })
  socket.subscribe('5', 'subscription { postCreated { id } }')
  t.ok(await hears(app, socket, '5'))
})

t.test('regression: subscribe messages did not count against the caller\'s rate limit', async (t) => {
  const { app, url } = await listening(t, { rateLimitMax: 8 })
  const cat = await signedIn(app)
  const socket = await new RawSocket(t, url).init(cat.headers)
  for (let i = 0; i < 12; i++) socket.subscribe(String(i), 'subscription { postCreated { id } }')
  const refused = await socket.answer('11')
  t.equal(refused.type, 'error')
  t.same(errorCodesOf(refused), ['RATE_LIMITED'])
  const rest = await app.inject({ url: `/api/v1/users/${cat.id}`, headers: cat.headers })
  t.equal(rest.statusCode, 429, 'the same counter as the caller\'s requests')
})

const sha256 = (query: string): string => createHash('sha256').update(query, 'utf8').digest('hex')
const persisted = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: sha256(query) } })
const storedBytes = async (app: FastifyInstance): Promise<number[]> =>
  (await app.db.selectFrom('persisted_queries').select('query').where('learnt', '=', true).execute()).map((row) => Buffer.byteLength(row.query))

t.test('regression: automatic persisted queries learnt documents of any size', async (t) => {
  const app = await build(t)
  const large = commented('{ __typename }', 20 * KIB)
  const ran = await graphql(app, large, { extensions: persisted(large) })
  t.same(ran.data, { __typename: 'Query' }, 'it runs')
  t.same(await storedBytes(app), [], 'but is not learnt')
  const again = await graphql(app, '', { extensions: persisted(large) })
  t.same(errorCodes(again), ['PERSISTED_QUERY_NOT_FOUND'])
})

t.test('the learnt documents stay within persistedQueryBytes', async (t) => {
  const app = await build(t, { graphql: { persistedQueryBytes: 40 * KIB } })
  const documents = ['a', 'b', 'c', 'd', 'e'].map((alias) => commented(`{ ${alias}: __typename }`, 15 * KIB))
  for (const document of documents) t.ok((await graphql(app, document, { extensions: persisted(document) })).data)
  const sizes = await storedBytes(app)
  t.ok(sizes.reduce((a, b) => a + b, 0) <= 40 * KIB, `${sizes.join(' + ')} bytes kept`)
  t.equal(sizes.length, 2)
  const latest = documents.at(-1) ?? ''
  t.ok((await graphql(app, '', { extensions: persisted(latest) })).data, 'the latest one is kept')
})

t.test('regression: a document repeating one field 1,200 times reached graphql-js validation (quadratic); now it is refused first', async (t) => {
  const app = await build(t)
  const repeated = await graphql(app, `{ ${'users { id } '.repeat(1200)}}`)
  t.equal(repeated.statusCode, 200)
  t.same(errorCodes(repeated), ['GRAPHQL_VALIDATION_FAILED'])
  t.match(repeated.errors?.[0]?.message, /"users" is selected 1200 times in one selection set; at most 10/)
  t.equal(repeated.data, undefined, 'nothing ran')
  const throughFragments = await graphql(app, `{ ${'... on Query { users { id } } '.repeat(11)}}`)
  t.same(errorCodes(throughFragments), ['GRAPHQL_VALIDATION_FAILED'], 'inline fragments count')
  const spreads = await graphql(app, `{ users { ...f ${'...f '.repeat(11)} } } fragment f on User { id }`)
  t.same(errorCodes(spreads), ['GRAPHQL_VALIDATION_FAILED'], 'fragment spreads count, in nested selections too')

  const me = await signedIn(app)
  const ordinary = await graphql(app, '{ users(limit: 1) { id ...f ... on User { id name } } } fragment f on User { id name }', { headers: me.headers })
  t.equal(ordinary.errors, undefined, 'a key selected a few times, as fragments do, is fine')
  t.ok(Array.isArray(ordinary.data?.users))
})
