import { EventEmitter, once } from 'node:events'
import type { FastifyInstance } from 'fastify'
import Fastify from 'fastify'
import t from 'tap'
import WebSocket from 'ws'
import { SubscriptionTokens } from '../../graphql/subscription-tokens.js'
import { openOutboxMessage } from '../../plugins/one-time-tokens.js'
import { unauthenticated } from '../../schema/errors.js'
import { graphql, login, signedIn, TEST_SECRET, testDb, type AuthHeaders } from '../helpers/app.js'
import type { Test } from '../helpers/database.js'
import { recordSql } from '../helpers/sql-log.js'
import { connect, listening, subscribe, type Subscription } from '../helpers/subscriptions.js'

const probeTitle = '__probe__'
const isProbe = (value: { postCreated?: { title?: string }, commentAdded?: { text?: string } }) =>
  value.postCreated?.title === probeTitle || value.commentAdded?.text === probeTitle

/**
 * Subscribing is asynchronous on the server: publish harmless probe events through `via` until
 * the subscription sees one, so that what the test does next is certainly heard.
 */
async function live (subscription: Subscription<any>, via: FastifyInstance, event: { authorId: number, postId?: number }): Promise<void> {
  const now = new Date()
  for (let attempt = 0; attempt < 100; attempt++) {
    if (event.postId === undefined) {
      await via.tandemEvents.publish('postCreated', { post: { id: 0, author_id: event.authorId, title: probeTitle, content: '', created_at: now, updated_at: now } })
    } else {
      await via.tandemEvents.publish('commentAdded', { comment: { id: 0, post_id: event.postId, author_id: event.authorId, text: probeTitle, created_at: now } })
    }
    try {
      await subscription.next(isProbe, 100)
      return
    } catch (error) {
      if ((error as Error).message !== 'no event in time') throw error
    }
  }
  throw new Error('the subscription never became live')
}

t.test('postCreated: written through GraphQL or REST, filtered by author, after commit', async (t) => {
  const { app, url } = await listening(t)
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const client = connect(t, url, ann.headers)
  const all = subscribe(client, 'subscription { postCreated { id title createdAt author { name } } }')
  const bobs = subscribe(client, 'subscription ($author: ID) { postCreated(authorId: $author) { id title } }', { author: String(bob.id) })
  await live(all, app, { authorId: ann.id })
  await live(bobs, app, { authorId: bob.id })

  const created = await graphql(app, `mutation { createPost(input: {title: "By Ann", content: "c", authorId: "${ann.id}"}) { id } }`, { headers: ann.headers })
  const id = created.data?.createPost.id as string
  const event = await all.next((v) => !isProbe(v))
  t.match(event, { postCreated: { id, title: 'By Ann', author: { name: 'Ann' }, createdAt: /Z$/ } })
  // Delivered after the commit: the post is there for anyone who reads it on hearing of it.
  const read = await graphql(app, `{ post(id: "${id}") { title } }`, { headers: bob.headers })
  t.same(read.data, { post: { title: 'By Ann' } })

  const rest = await app.inject({ method: 'POST', url: '/api/v1/posts', headers: bob.headers, payload: { title: 'By Bob', content: 'c' } })
  t.equal(rest.statusCode, 201)
  t.match(await all.next((v) => !isProbe(v) && v.postCreated.title === 'By Bob'), { postCreated: { id: String(JSON.parse(rest.body).id), author: { name: 'Bob' } } }, 'a REST write is heard too')
  t.match(await bobs.next((v) => !isProbe(v)), { postCreated: { title: 'By Bob' } })
  t.notOk(bobs.received.some((v: any) => v.postCreated.title === 'By Ann'), 'the authorId filter holds')
})

t.test('commentAdded(postId) hears the comments of that post only', async (t) => {
  const { app, url } = await listening(t)
  const cy = await signedIn(app, { name: 'Cy' })
  const first = await graphql(app, `mutation { createPost(input: {title: "one", content: "c", authorId: "${cy.id}"}) { id } }`, { headers: cy.headers })
  const second = await graphql(app, `mutation { createPost(input: {title: "two", content: "c", authorId: "${cy.id}"}) { id } }`, { headers: cy.headers })
  const postId = Number(first.data?.createPost.id)
  const client = connect(t, url, cy.headers)
  const comments = subscribe(client, 'subscription ($post: ID!) { commentAdded(postId: $post) { text author { name } post { title } } }', { post: String(postId) })
  await live(comments, app, { authorId: cy.id, postId })

  await graphql(app, `mutation { createComment(input: {postId: "${second.data?.createPost.id as string}", text: "elsewhere"}) { id } }`, { headers: cy.headers })
  await graphql(app, `mutation { createComment(input: {postId: "${postId}", text: "here"}) { id } }`, { headers: cy.headers })
  t.same(await comments.next((v) => !isProbe(v)), { commentAdded: { text: 'here', author: { name: 'Cy' }, post: { title: 'one' } } })
  const rest = await app.inject({ method: 'POST', url: `/api/v1/posts/${postId}/comments`, headers: cy.headers, payload: { text: 'by REST' } })
  t.equal(rest.statusCode, 201)
  t.match(await comments.next((v) => !isProbe(v) && v.commentAdded.text !== 'here'), { commentAdded: { text: 'by REST' } })
  t.notOk(comments.received.some((v: any) => v.commentAdded.text === 'elsewhere'))
})

t.test('a subscription without a valid token is refused', async (t) => {
  const { app, url } = await listening(t)
  const dee = await signedIn(app)
  for (const [name, headers] of [
    ['no token', undefined],
    ['a forged token', { authorization: 'Bearer x.y.z' }],
    ['not a bearer token', { authorization: dee.headers.authorization.replace('Bearer', 'Basic') }]
  ] as const) {
    const refused = subscribe(connect(t, url, headers), 'subscription { postCreated { id } }')
    t.match(await refused.failed, { code: 4403, reason: 'Forbidden' }, name)
    t.same(refused.received, [])
  }

  const logout = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: dee.headers })
  t.equal(logout.statusCode, 204)
  const revoked = subscribe(connect(t, url, dee.headers), 'subscription { postCreated { id } }')
  t.match(await revoked.failed, { code: 4403 }, 'a revoked token')
})

interface Closed { code: number, reason: string }

/** A socket on the legacy `graphql-ws` protocol, its `connection_init` acknowledged; `closed` tells how the server closed it. */
async function legacySocket (t: Test, url: string, headers: AuthHeaders): Promise<{ closed: Promise<Closed> }> {
  const socket = new WebSocket(url, 'graphql-ws')
  t.teardown(() => socket.close())
  const closed = new Promise<Closed>((resolve) => {
    socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() }))
  })
  await once(socket, 'open')
  socket.send(JSON.stringify({ type: 'connection_init', payload: headers }))
  const [message] = await once(socket, 'message') as [Buffer]
  const { type } = JSON.parse(message.toString()) as { type: string }
  if (type !== 'connection_ack') throw new Error(`legacy connection refused: ${type}`)
  return { closed }
}

/** What `promise` gives; a failure naming `what` if it never comes, rather than a hang until tap's timeout. */
async function eventually<T> (promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const gaveUp = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`${what} never happened`)), 15_000) })
  try {
    return await Promise.race([promise, gaveUp])
  } finally {
    clearTimeout(timer)
  }
}

const unauthorized = { code: 4401, reason: 'Unauthorized' }

t.test('logging out closes the subscriptions of that token with 4401, on both protocols', async (t) => {
  const { app, url } = await listening(t)
  const gus = await signedIn(app)
  const posts = subscribe(connect(t, url, gus.headers), 'subscription { postCreated { title } }')
  await live(posts, app, { authorId: gus.id })
  const legacy = await legacySocket(t, url, gus.headers)
  const otherToken = await login(app, gus.email, gus.password)
  const kept = subscribe(connect(t, url, otherToken), 'subscription { postCreated { title } }')
  await live(kept, app, { authorId: gus.id })

  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: gus.headers })).statusCode, 204)
  t.match(await eventually(posts.failed, 'closing the graphql-transport-ws socket'), unauthorized)
  t.match(await eventually(legacy.closed, 'closing the graphql-ws socket'), unauthorized)

  const rest = await app.inject({ method: 'POST', url: '/api/v1/posts', headers: otherToken, payload: { title: 'after logout', content: 'c' } })
  t.equal(rest.statusCode, 201)
  t.match(await kept.next((v) => !isProbe(v)), { postCreated: { title: 'after logout' } }, 'another token of the same user keeps its subscription')
  t.same(posts.received.filter((v) => !isProbe(v)), [], 'the closed subscription heard nothing more')
})

t.test('a password reset closes the subscriptions of the user\'s tokens with 4401', async (t) => {
  const { app, url } = await listening(t)
  const hal = await signedIn(app)
  const posts = subscribe(connect(t, url, hal.headers), 'subscription { postCreated { title } }')
  await live(posts, app, { authorId: hal.id })

  t.equal((await app.inject({ method: 'POST', url: `/api/v1/users/${hal.id}/reset-password`, headers: hal.headers })).statusCode, 202)
  const mail = await app.db.selectFrom('email_outbox').selectAll().where('kind', '=', 'reset_password').orderBy('id', 'desc').executeTakeFirstOrThrow()
  const token = /^([A-Za-z0-9_-]{43})$/m.exec(openOutboxMessage(mail, TEST_SECRET))?.[1] ?? ''
  const reset = await app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token, password: 'brand-new-password' } })
  t.equal(reset.statusCode, 204)
  t.match(await eventually(posts.failed, 'closing the socket'), unauthorized)
})

t.test('deleting a user closes the subscriptions of their tokens with 4401', async (t) => {
  const { app, url } = await listening(t)
  const ivy = await signedIn(app)
  const posts = subscribe(connect(t, url, ivy.headers), 'subscription { postCreated { title } }')
  await live(posts, app, { authorId: ivy.id })
  t.equal((await app.inject({ method: 'DELETE', url: `/api/v1/users/${ivy.id}`, headers: ivy.headers })).statusCode, 204)
  t.match(await eventually(posts.failed, 'closing the socket'), unauthorized)
})

t.test('a subscription is closed with 4401 once its token expires', async (t) => {
  // Long enough for the subscription to be live before the token expires, on a busy machine too.
  const { app, url } = await listening(t, { jwtExpiresIn: '4s' })
  const ivy = await signedIn(app)
  const posts = subscribe(connect(t, url, ivy.headers), 'subscription { postCreated { title } }')
  await live(posts, app, { authorId: ivy.id })
  t.match(await eventually(posts.failed, 'closing the socket'), unauthorized)
})

t.test('the token watch forgets closed sockets and closes nobody when tokens cannot be checked', async (t) => {
  class FakeSocket extends EventEmitter {
    readyState = 1
    closedWith: unknown[] = []
    close (...args: unknown[]) { this.closedWith = args; this.readyState = 3 }
  }
  const checked: string[] = []
  let outage = false
  const watch = new SubscriptionTokens(async (token) => {
    checked.push(token)
    if (outage) throw new Error('database unavailable')
    if (token === 'revoked') throw unauthenticated('token revoked')
  }, Fastify().log)
  const [good, revoked, gone] = [new FakeSocket(), new FakeSocket(), new FakeSocket()]
  watch.watch(good, 'good')
  watch.watch(revoked, 'revoked')
  watch.watch(gone, 'gone')
  gone.emit('close')

  outage = true
  await t.rejects(watch.sweep(), /database unavailable/)
  t.same([good.closedWith, revoked.closedWith], [[], []], 'an outage closes nobody')
  outage = false
  checked.length = 0
  await watch.sweep()
  t.same(checked, ['good', 'revoked'], 'a closed socket is no longer checked')
  t.same([good.closedWith, revoked.closedWith], [[], [4401, 'Unauthorized']])
  checked.length = 0
  await watch.sweep()
  t.same(checked, ['good'], 'nor one it closed')
})

t.test('subscriptions are validated and limited like queries', async (t) => {
  const { app, url } = await listening(t)
  const eve = await signedIn(app)
  const client = connect(t, url, eve.headers)
  const invalid = subscribe(client, 'subscription { postCreated { nope } }')
  await t.rejects(invalid.next(), /nope/)
  const badId = subscribe(client, 'subscription { commentAdded(postId: "x") { id } }')
  await t.rejects(badId.next(), /positive integer/)
  const costly = subscribe(client, 'subscription { postCreated { author { posts(limit: 100) { comments(limit: 100) { text } } } } }')
  await t.rejects(costly.next(), /costs/)
})

t.test('an event is resolved once per distinct selection, not once per subscriber', async (t) => {
  const recorded = recordSql(await testDb())
  const { app, url } = await listening(t, { db: recorded.db })
  const fay = await signedIn(app, { name: 'Fay' })
  const names = 'subscription { postCreated { title author { name } } }'
  const emails = 'subscription ($limit: Int) { postCreated { title author { email posts(limit: $limit) { title } } } }'
  // Several connections, as many clients would have, each with both selections a few times.
  const subscriptions: Array<{ subscription: Subscription<any>, asks: 'names' | 'emails' }> = []
  for (let connection = 0; connection < 3; connection++) {
    const client = connect(t, url, fay.headers)
    for (let i = 0; i < 8; i++) subscriptions.push({ subscription: subscribe(client, names), asks: 'names' })
    for (let i = 0; i < 3; i++) subscriptions.push({ subscription: subscribe(client, emails, { limit: 1 }), asks: 'emails' })
  }
  for (const { subscription } of subscriptions) await live(subscription, app, { authorId: fay.id })
  const now = new Date()
  const heardByAll = async (title: string) => {
    await app.tandemEvents.publish('postCreated', { post: { id: 1, author_id: fay.id, title, content: 'c', created_at: now, updated_at: now } })
    return Promise.all(subscriptions.map(async ({ subscription, asks }) => ({ asks, event: await subscription.next((v) => v.postCreated.title === title) })))
  }
  // Each subscription's events come in order: once all have heard this one, no probe is left to resolve.
  await heardByAll('settled')

  recorded.statements.length = 0
  for (const { asks, event } of await heardByAll('shared')) {
    t.same(event, asks === 'names'
      ? { postCreated: { title: 'shared', author: { name: 'Fay' } } }
      : { postCreated: { title: 'shared', author: { email: fay.email, posts: [] } } })
  }
  // Other statements may run meanwhile (the token watch's refresh); those that load the authors are the event's.
  const loads = recorded.statements.filter((statement) => statement.includes('"users"'))
  t.equal(loads.length, 2, `${subscriptions.length} subscribers, two selections: one statement each`)
})

t.test('with redisUrl, an event written through one instance reaches subscribers of another', { skip: process.env.REDIS_URL_TEST === undefined || process.env.REDIS_URL_TEST === '' ? 'REDIS_URL_TEST is not set' : false }, async (t) => {
  const redisUrl = process.env.REDIS_URL_TEST as string
  const { app: writer } = await listening(t, { redisUrl })
  const { url: readerUrl } = await listening(t, { redisUrl }, false)
  const fay = await signedIn(writer, { name: 'Fay' })
  const client = connect(t, readerUrl, fay.headers)
  const posts = subscribe(client, 'subscription { postCreated { title author { name } } }')
  await live(posts, writer, { authorId: fay.id })

  await graphql(writer, `mutation { createPost(input: {title: "through redis", content: "c", authorId: "${fay.id}"}) { id } }`, { headers: fay.headers })
  t.same(await posts.next((v) => !isProbe(v)), { postCreated: { title: 'through redis', author: { name: 'Fay' } } })
  const rest = await writer.inject({ method: 'POST', url: '/api/v1/posts', headers: fay.headers, payload: { title: 'REST through redis', content: 'c' } })
  t.equal(rest.statusCode, 201)
  t.same(await posts.next((v) => !isProbe(v) && v.postCreated.title !== 'through redis'), { postCreated: { title: 'REST through redis', author: { name: 'Fay' } } })
})
