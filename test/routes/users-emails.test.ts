// Issue 37, finding 5: every signed-in user could list every user's email (`GET /users`), the other
// half of locking accounts out (an address to aim at). A user's email is read by that user and
// administrators only: everyone else gets the same shape with `email: null`, in both styles, wherever
// a user appears (lists, single reads, `include=author`, nested GraphQL, subscriptions), and the
// email filter and `q` find only the caller's own address.
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { adminToken, apiClient, body, build, graphql, signedIn, signUp, type AuthHeaders } from '../helpers/app.js'
import { connect, listening, subscribe, type Subscription } from '../helpers/subscriptions.js'

interface User { id: number, name: string, email: string | null, created_at?: string }
interface Page<T> { data: T[], pagination: { total?: number } }

/** Two users (Ann, Bob) with a post each, an administrator, and a REST client of each. */
async function people (app: FastifyInstance) {
  const ann = await signedIn(app, { name: 'Ann', email: 'ann.secret@example.com' })
  const bob = await signedIn(app, { name: 'Bob', email: 'bob.hidden@example.com' })
  const admin = await adminToken(app)
  const asAnn = apiClient(app, ann.headers)
  const asBob = apiClient(app, bob.headers)
  const asAdmin = apiClient(app, admin)
  const annPost = body<{ id: number }>(await asAnn('POST', '/posts', { title: 'By Ann', content: 'a' }))
  const bobPost = body<{ id: number }>(await asBob('POST', '/posts', { title: 'By Bob', content: 'b' }))
  return { ann, bob, admin, asAnn, asBob, asAdmin, annPost, bobPost }
}

t.test('REST: GET /users and /users/{id} show an email to its user and administrators only, in the same shape', async (t) => {
  const app = await build(t)
  const { ann, bob, asAnn, asAdmin } = await people(app)
  const seen = body<Page<User>>(await asAnn('GET', '/users'))
  const annSees = new Map(seen.data.map((user) => [user.id, user]))
  t.equal(annSees.get(ann.id)?.email, ann.email, 'her own')
  t.same(annSees.get(bob.id), { id: bob.id, name: 'Bob', email: null, created_at: annSees.get(bob.id)?.created_at }, 'another user\'s: null, the same fields')
  const narrowed = body<Page<User>>(await asAnn('GET', '/users?fields=email'))
  t.same(narrowed.data.find((user) => user.id === bob.id), { id: bob.id, email: null }, 'fields=email alike')
  t.equal(narrowed.data.find((user) => user.id === ann.id)?.email, ann.email)
  t.equal(body<User>(await asAnn('GET', `/users/${bob.id}`)).email, null)
  t.equal(body<User>(await asAnn('GET', `/users/${ann.id}`)).email, ann.email)
  const adminSees = body<Page<User>>(await asAdmin('GET', '/users')).data
  t.equal(adminSees.find((user) => user.id === bob.id)?.email, bob.email, 'an administrator reads every email')
  t.equal(body<User>(await asAdmin('GET', `/users/${bob.id}`)).email, bob.email)
  const created = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'Cy', email: 'cy@example.com' }, remoteAddress: '10.9.9.9' })
  t.equal(body<User>(created).email, 'cy@example.com', 'a sign-up answers the address it was given')
})

t.test('REST: the email filter and q find only the caller\'s own address', async (t) => {
  const app = await build(t)
  const { ann, bob, asAnn, asAdmin } = await people(app)
  const find = async (client: typeof asAnn, query: string) => body<Page<User>>(await client('GET', `/users?total=true&${query}`))
  const probed = await find(asAnn, `email=${encodeURIComponent(bob.email)}`)
  t.same(probed.data, [], 'another user\'s address finds nothing')
  t.equal(probed.pagination.total, 0, 'nor counts anything')
  t.same((await find(asAnn, `email=${encodeURIComponent(ann.email.toUpperCase())}`)).data.map((user) => user.id), [ann.id], 'her own, whatever its case')
  t.same((await find(asAnn, 'q=hidden')).data, [], 'q does not search other users\' addresses')
  t.same((await find(asAnn, 'q=Bob')).data.map((user) => user.id), [bob.id], 'it searches their names')
  t.same((await find(asAdmin, `email=${encodeURIComponent(bob.email)}`)).data.map((user) => user.email), [bob.email], 'an administrator finds any address')
  t.same((await find(asAdmin, 'q=hidden')).data.map((user) => user.id), [bob.id])
})

t.test('GraphQL: users takes the filters of GET /users, and its email filter and q find only the caller\'s own address', async (t) => {
  const app = await build(t)
  const { ann, bob, admin } = await people(app)
  const ids = async (headers: AuthHeaders, args: string) => {
    const { data, errors } = await graphql(app, `{ users(${args}) { id } page: usersConnection(${args}) { edges { node { id } } } }`, { headers })
    t.equal(errors, undefined, args)
    const listed = (data?.users as Array<{ id: string }>).map(({ id }) => Number(id))
    t.same((data?.page as { edges: Array<{ node: { id: string } }> }).edges.map(({ node }) => Number(node.id)), listed, `${args}: the connection finds the same`)
    return listed
  }
  t.same(await ids(ann.headers, `email: ${JSON.stringify(bob.email)}`), [], 'another user\'s address finds nothing')
  t.same(await ids(ann.headers, `email: ${JSON.stringify(ann.email.toUpperCase())}`), [ann.id], 'her own, whatever its case')
  t.same(await ids(ann.headers, 'q: "hidden"'), [], 'q does not search other users\' addresses')
  t.same(await ids(ann.headers, 'q: "Bob"'), [bob.id], 'it searches their names')
  t.same(await ids(ann.headers, 'name: "Bob"'), [bob.id], 'name, as REST\'s')
  t.same(await ids(admin, `email: ${JSON.stringify(bob.email)}`), [bob.id], 'an administrator finds any address')
  const short = await graphql(app, '{ users(q: "ab") { id } }', { headers: ann.headers })
  t.match(short.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'q' } }], 'checked as REST checks it')
  const page = await graphql(app, '{ usersConnection(first: 1, name: "Bob") { pageInfo { endCursor } } }', { headers: ann.headers })
  const cursor = (page.data?.usersConnection as { pageInfo: { endCursor: string } }).pageInfo.endCursor
  t.equal((await apiClient(app, ann.headers)('GET', `/users?name=Bob&cursor=${encodeURIComponent(cursor)}`)).statusCode, 200, 'its cursors are those of GET /users with the same filters')
})

t.test('REST: an embedded user (include=author) shows its email as a user read does', async (t) => {
  const app = await build(t)
  const { ann, bob, asAnn, asAdmin, annPost, bobPost } = await people(app)
  const authors = body<Page<{ id: number, author: User }>>(await asAnn('GET', '/posts?include=author')).data
  t.equal(authors.find((post) => post.id === bobPost.id)?.author.email, null, 'another author\'s: null')
  t.equal(authors.find((post) => post.id === annPost.id)?.author.email, ann.email, 'her own')
  t.equal(body<{ author: User }>(await asAnn('GET', `/posts/${bobPost.id}?include=author`)).author.email, null)
  t.equal(body<Page<{ author: User }>>(await asAnn('GET', `/users/${bob.id}/posts?include=author`)).data[0]?.author.email, null, 'GET /users/{id}/posts alike')
  t.equal(body<{ author: User }>(await asAdmin('GET', `/posts/${bobPost.id}?include=author`)).author.email, bob.email, 'an administrator reads it')
})

const gql = (app: FastifyInstance, headers: AuthHeaders | undefined, query: string) => graphql(app, query, headers === undefined ? {} : { headers })

t.test('GraphQL: User.email is its user\'s and administrators\', wherever a user is reached', async (t) => {
  const app = await build(t)
  const { ann, bob, admin, bobPost } = await people(app)
  const users = await gql(app, ann.headers, '{ users { id email } usersConnection { edges { node { id email } } } }')
  t.same(users.errors, undefined)
  const emailOf = (list: Array<{ id: string, email: string | null }>) => new Map(list.map((user) => [Number(user.id), user.email]))
  const listed = emailOf(users.data?.users)
  t.same([listed.get(ann.id), listed.get(bob.id)], [ann.email, null], 'users: her own, null for Bob')
  const paged = emailOf(users.data?.usersConnection.edges.map((edge: { node: { id: string, email: string | null } }) => edge.node))
  t.same([paged.get(ann.id), paged.get(bob.id)], [ann.email, null], 'usersConnection alike')
  t.same((await gql(app, ann.headers, `{ user(id: "${bob.id}") { email } }`)).data, { user: { email: null } })
  const nested = await gql(app, ann.headers, `{ post(id: "${bobPost.id}") { author { id email posts { author { email } } } } user(id: "${ann.id}") { posts { author { email } } } }`)
  t.same(nested.data, { post: { author: { id: String(bob.id), email: null, posts: [{ author: { email: null } }] } }, user: { posts: [{ author: { email: ann.email } }] } }, 'at every depth')
  const onlyEmail = await gql(app, ann.headers, '{ posts { author { email } } }')
  t.same(onlyEmail.data?.posts.map((post: { author: { email: string | null } }) => post.author.email), [ann.email, null], 'without asking the id, her own still shows')
  t.same((await gql(app, admin, `{ user(id: "${bob.id}") { email } post(id: "${bobPost.id}") { author { email } } }`)).data, { user: { email: bob.email }, post: { author: { email: bob.email } } }, 'an administrator reads every email')
  const created = await gql(app, undefined, 'mutation { createUser(input: {name: "Dee", email: "dee@example.com"}) { email } }')
  t.same(created.data, { createUser: { email: 'dee@example.com' } }, 'a sign-up answers the address it was given')
})

t.test('GraphQL: the SDL says User.email may be null', async (t) => {
  const app = await build(t)
  const res = await gql(app, undefined, '{ __type(name: "User") { fields { name type { kind name } } } }')
  t.same(res.data?.__type.fields.find((field: { name: string }) => field.name === 'email').type, { kind: 'SCALAR', name: 'String' })
})

/** Publishes probes until `subscription` hears one, so that what comes next is certainly heard. */
async function live (subscription: Subscription<any>, app: FastifyInstance, authorId: number): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    const now = new Date()
    await app.tandemEvents.publish('postCreated', { post: { id: 0, author_id: authorId, title: 'probe', content: '', created_at: now, updated_at: now } })
    try {
      await subscription.next((value) => value.postCreated.title === 'probe', 100)
      return
    } catch (error) {
      if ((error as Error).message !== 'no event in time') throw error
    }
  }
  throw new Error('the subscription never became live')
}

t.test('subscriptions: one shared answer, each subscriber shown the email as its own rule says', async (t) => {
  const { app, url } = await listening(t)
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signUp(app, { name: 'Bob' })
  const bobHeaders = await apiClient(app)('POST', '/auth/login', { email: bob.email, password: bob.password })
  const admin = await adminToken(app)
  const selection = 'subscription { postCreated { title author { name email } } }'
  const subscribers = {
    ann: subscribe(connect(t, url, ann.headers), selection),
    bob: subscribe(connect(t, url, { authorization: `Bearer ${body<{ accessToken: string }>(bobHeaders).accessToken}` }), selection),
    admin: subscribe(connect(t, url, admin), selection)
  }
  for (const subscription of Object.values(subscribers)) await live(subscription, app, ann.id)
  t.equal((await apiClient(app, ann.headers)('POST', '/posts', { title: 'Heard', content: 'c' })).statusCode, 201)
  const heard = async (subscription: Subscription<any>) => (await subscription.next((value) => value.postCreated.title === 'Heard')).postCreated.author
  t.same(await heard(subscribers.ann), { name: 'Ann', email: ann.email }, 'the author hears her own address')
  t.same(await heard(subscribers.bob), { name: 'Ann', email: null }, 'another user does not, from the same shared answer')
  t.same(await heard(subscribers.admin), { name: 'Ann', email: ann.email }, 'an administrator does')
})
