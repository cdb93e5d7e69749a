import { readdir, readFile } from 'node:fs/promises'
import { getIntrospectionQuery, parse } from 'graphql'
import t from 'tap'
import { createComment } from '../../db/comments.js'
import { createPost } from '../../db/posts.js'
import { users } from '../../rules/users.js'
import { schemaDirectory } from '../../graphql/schema.js'
import { recordSql } from '../helpers/sql-log.js'
import { executedByGraphql } from '../helpers/executed.js'
import { adminToken, authHeaders, build, errorCodes, graphql, signedIn, testDb, type GraphqlResponse } from '../helpers/app.js'

t.test('the schema comes from SDL files under schema/graphql, one type per file', async (t) => {
  const files = (await readdir(schemaDirectory)).filter((f) => f.endsWith('.graphql'))
  // The declared resources' types are built from their declarations (schema/graphql/declared/ shows them).
  t.same(files.sort(), ['AuthPayload.graphql', 'BulkChange.graphql', 'Date.graphql', 'DateTime.graphql', 'Mutation.graphql', 'PageInfo.graphql', 'Query.graphql', 'Subscription.graphql'])
  for (const file of files) {
    const document = parse(await readFile(new URL(file, schemaDirectory), 'utf8'))
    t.equal(document.definitions.length, 1, `${file} holds one definition`)
    const [definition] = document.definitions
    t.equal(definition !== undefined && 'name' in definition ? definition.name?.value + '.graphql' : undefined, file, `${file} is named after its type`)
  }
})

t.test('reads: user, users, post, nested relations in camelCase with string ids', async (t) => {
  const app = await build(t)
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const post = await createPost(app.db, { authorId: ann.id, title: 'Hello', content: 'World' })
  await createComment(app.db, { postId: post.id, authorId: bob.id, text: 'Nice' })

  const res = await graphql(app, `query ($id: ID!, $post: ID!) {
    user(id: $id) { id name email createdAt posts { id title author { name } } }
    post(id: $post) { id title content createdAt updatedAt author { id } comments { text author { name } post { id } } }
    missing: user(id: "999") { id }
  }`, { variables: { id: String(ann.id), post: String(post.id) }, headers: ann.headers })
  t.equal(res.statusCode, 200)
  t.same(res.errors, undefined)
  t.match(res.data, {
    user: { id: String(ann.id), name: 'Ann', email: ann.email, posts: [{ id: String(post.id), title: 'Hello', author: { name: 'Ann' } }] },
    post: { id: String(post.id), author: { id: String(ann.id) }, comments: [{ text: 'Nice', author: { name: 'Bob' }, post: { id: String(post.id) } }] },
    missing: null
  })
  t.match(res.data?.user.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  t.equal(res.data?.post.createdAt, post.created_at.toISOString())

  const list = await graphql(app, '{ first: users(limit: 1) { name } rest: users(limit: 5, offset: 1) { name } }', { headers: ann.headers })
  t.same(list.data, { first: [{ name: 'Ann' }], rest: [{ name: 'Bob' }] })
  const badOffset = await graphql(app, '{ users(offset: -1) { id } }', { headers: ann.headers })
  t.same(errorCodes(badOffset), ['BAD_USER_INPUT'])
  const badId = await graphql(app, '{ user(id: "abc") { id } }', { headers: ann.headers })
  t.match(badId.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'id' } }])
})

t.test('usersConnection pages by the same keyset cursors as GET /users', async (t) => {
  const app = await build(t)
  const headers = await authHeaders(app)
  for (const name of ['A', 'B', 'C', 'D', 'E']) await app.tandemResources(users).create(undefined, { name, email: `${name}@example.com` })
  const query = 'query ($after: String) { usersConnection(first: 2, after: $after) { edges { cursor node { name } } pageInfo { hasNextPage endCursor } } }'
  const names: string[] = []
  let after: string | null = null
  let pages = 0
  do {
    const res: GraphqlResponse = await graphql(app, query, { variables: { after }, headers })
    t.same(res.errors, undefined)
    const connection = res.data?.usersConnection
    names.push(...connection.edges.map((e: { node: { name: string } }) => e.node.name))
    t.equal(connection.pageInfo.endCursor, connection.edges.at(-1)?.cursor ?? null)
    after = connection.pageInfo.hasNextPage === true ? connection.pageInfo.endCursor : null
    pages++
  } while (after !== null)
  t.same(names, ['A', 'B', 'C', 'D', 'E'])
  t.equal(pages, 3)

  // A cursor of the resource style continues here, and an edge's cursor continues after its node.
  const rest = await app.inject({ url: '/api/v1/users?limit=3', headers })
  const { nextCursor } = JSON.parse(rest.body).pagination
  const fromRest = await graphql(app, query, { variables: { after: nextCursor }, headers })
  t.same(fromRest.data?.usersConnection.edges.map((e: { node: { name: string } }) => e.node.name), ['D', 'E'])
  t.equal(fromRest.data?.usersConnection.pageInfo.hasNextPage, false)

  const forged = await graphql(app, query, { variables: { after: 'not-a-cursor' }, headers })
  t.match(forged.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'cursor' } }])
  const tooMany = await graphql(app, '{ usersConnection(first: 101) { edges { cursor } } }', { headers })
  t.match(tooMany.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'first' } }])
})

t.test('mutations follow the rules of the resource style', async (t) => {
  const app = await build(t)

  t.test('createUser is public; duplicate email → CONFLICT, bad input → BAD_USER_INPUT', async (t) => {
    const created = await graphql(app, 'mutation { createUser(input: {name: "Cy", email: "cy@example.com", password: "long enough"}) { id name email createdAt } }')
    t.equal(created.statusCode, 200)
    t.match(created.data?.createUser, { id: /^\d+$/, name: 'Cy', email: 'cy@example.com' })
    const duplicate = await graphql(app, 'mutation { createUser(input: {name: "Cy", email: "CY@example.com"}) { id } }')
    t.equal(duplicate.statusCode, 200)
    t.same(duplicate.data, { createUser: null })
    t.match(duplicate.errors, [{ message: 'email already exists', path: ['createUser'], extensions: { code: 'CONFLICT', field: 'email' } }])
    const badEmail = await graphql(app, 'mutation { createUser(input: {name: "Cy", email: "nope"}) { id } }')
    t.match(badEmail.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'email' } }])
    const shortPassword = await graphql(app, 'mutation ($input: CreateUserInput!) { createUser(input: $input) { id } }', { variables: { input: { name: 'D', email: 'd@example.com', password: 'short' } } })
    t.match(shortPassword.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'password' } }])
    const missing = await graphql(app, 'mutation ($input: CreateUserInput!) { createUser(input: $input) { id } }', { variables: { input: { name: 'D' } } })
    t.same(errorCodes(missing), ['BAD_USER_INPUT'])
    t.equal(missing.data, undefined, 'a variable that does not fit its type stops the request')
  })

  t.test('login returns a token that works; a wrong password is UNAUTHENTICATED', async (t) => {
    const user = await signedIn(app, { email: 'dee@example.com', password: 'dee password' })
    const res = await graphql(app, 'mutation { login(email: "DEE@example.com", password: "dee password") { accessToken tokenType expiresIn } }')
    t.match(res.data?.login, { accessToken: /\./, tokenType: 'Bearer', expiresIn: 900 })
    const me = await graphql(app, `{ user(id: "${user.id}") { email } }`, { headers: { authorization: `Bearer ${res.data?.login.accessToken}` } })
    t.same(me.data, { user: { email: 'dee@example.com' } })
    const wrong = await graphql(app, 'mutation { login(email: "dee@example.com", password: "not it") { accessToken } }')
    t.same(wrong.data, { login: null })
    t.match(wrong.errors, [{ message: 'invalid email or password', extensions: { code: 'UNAUTHENTICATED' } }])
    // A public field ignores a bad token, as a public REST route does.
    const withBadToken = await graphql(app, 'mutation { login(email: "dee@example.com", password: "dee password") { tokenType } }', { headers: { authorization: 'Bearer nonsense' } })
    t.same(withBadToken.data, { login: { tokenType: 'Bearer' } })
  })

  t.test('updateUser and deleteUser: self or admin', async (t) => {
    const eve = await signedIn(app, { name: 'Eve' })
    const fay = await signedIn(app, { name: 'Fay' })
    const own = await graphql(app, `mutation { updateUser(id: "${eve.id}", input: {name: "Eve 2"}) { id name email } }`, { headers: eve.headers })
    t.same(own.data, { updateUser: { id: String(eve.id), name: 'Eve 2', email: eve.email } })
    const other = await graphql(app, `mutation { updateUser(id: "${fay.id}", input: {name: "x"}) { id } }`, { headers: eve.headers })
    t.match(other.errors, [{ extensions: { code: 'FORBIDDEN' } }])
    const admin = await adminToken(app)
    const byAdmin = await graphql(app, `mutation { updateUser(id: "${fay.id}", input: {email: "fay2@example.com"}) { email } }`, { headers: admin })
    t.same(byAdmin.data, { updateUser: { email: 'fay2@example.com' } })
    const taken = await graphql(app, `mutation { updateUser(id: "${fay.id}", input: {email: "${eve.email.toUpperCase()}"}) { email } }`, { headers: admin })
    t.match(taken.errors, [{ extensions: { code: 'CONFLICT', field: 'email' } }])
    const empty = await graphql(app, `mutation { updateUser(id: "${fay.id}", input: {name: ""}) { email } }`, { headers: admin })
    t.match(empty.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'name' } }])
    const nobody = await graphql(app, 'mutation { updateUser(id: "99999", input: {name: "x"}) { id } }', { headers: admin })
    t.match(nobody.errors, [{ message: 'user not found', extensions: { code: 'NOT_FOUND' } }])

    const notYours = await graphql(app, `mutation { deleteUser(id: "${fay.id}") }`, { headers: eve.headers })
    t.match(notYours.errors, [{ extensions: { code: 'FORBIDDEN' } }])
    const gone = await graphql(app, `mutation { deleteUser(id: "${eve.id}") }`, { headers: eve.headers })
    t.same(gone.data, { deleteUser: true })
    const again = await graphql(app, `mutation { deleteUser(id: "${eve.id}") }`, { headers: admin })
    t.same(again.data, { deleteUser: false })
    const anonymous = await graphql(app, `mutation { deleteUser(id: "${fay.id}") }`)
    t.match(anonymous.errors, [{ extensions: { code: 'UNAUTHENTICATED' } }])
  })

  t.test('createPost as oneself (or anyone as admin), createComment as the caller', async (t) => {
    const gus = await signedIn(app, { name: 'Gus' })
    const hal = await signedIn(app, { name: 'Hal' })
    const post = await graphql(app, `mutation { createPost(input: {title: "T", content: "C", authorId: "${gus.id}"}) { id title content author { name } comments { id } } }`, { headers: gus.headers })
    t.match(post.data?.createPost, { id: /^\d+$/, title: 'T', content: 'C', author: { name: 'Gus' }, comments: [] })
    const asOther = await graphql(app, `mutation { createPost(input: {title: "T", content: "C", authorId: "${hal.id}"}) { id } }`, { headers: gus.headers })
    t.match(asOther.errors, [{ extensions: { code: 'FORBIDDEN' } }])
    const admin = await adminToken(app)
    const forHal = await graphql(app, `mutation { createPost(input: {title: "T", content: "C", authorId: "${hal.id}"}) { author { name } } }`, { headers: admin })
    t.same(forHal.data, { createPost: { author: { name: 'Hal' } } })
    const forNobody = await graphql(app, 'mutation { createPost(input: {title: "T", content: "C", authorId: "99999"}) { id } }', { headers: admin })
    t.same(errorCodes(forNobody), ['BAD_USER_INPUT'])
    t.notMatch(JSON.stringify(forNobody.errors), /violates|constraint|insert|select/i, 'no database text')
    const emptyTitle = await graphql(app, `mutation { createPost(input: {title: "", content: "C", authorId: "${gus.id}"}) { id } }`, { headers: gus.headers })
    t.match(emptyTitle.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'title' } }])

    const postId = post.data?.createPost.id as string
    const comment = await graphql(app, `mutation { createComment(input: {postId: "${postId}", text: "hi"}) { id text createdAt author { name } post { id } } }`, { headers: hal.headers })
    t.match(comment.data?.createComment, { text: 'hi', author: { name: 'Hal' }, post: { id: postId } })
    const noPost = await graphql(app, 'mutation { createComment(input: {postId: "99999", text: "hi"}) { id } }', { headers: hal.headers })
    t.match(noPost.errors, [{ message: 'post not found', extensions: { code: 'NOT_FOUND' } }])
    const anonymous = await graphql(app, `mutation { createComment(input: {postId: "${postId}", text: "hi"}) { id } }`)
    t.match(anonymous.errors, [{ extensions: { code: 'UNAUTHENTICATED' } }])
  })
})

t.test('authentication: the same tokens as REST', async (t) => {
  const app = await build(t)
  const ivy = await signedIn(app)
  const none = await graphql(app, '{ users { id } }')
  t.equal(none.statusCode, 200)
  t.same(none.data, null)
  t.match(none.errors, [{ path: ['users'], extensions: { code: 'UNAUTHENTICATED' } }])
  const forged = await graphql(app, '{ users { id } }', { headers: { authorization: 'Bearer a.b.c' } })
  t.same(errorCodes(forged), ['UNAUTHENTICATED'])
  const ok = await graphql(app, '{ users { id } }', { headers: ivy.headers })
  t.same(ok.errors, undefined)
  const logout = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: ivy.headers })
  t.equal(logout.statusCode, 204)
  const revoked = await graphql(app, '{ users { id } }', { headers: ivy.headers })
  t.match(revoked.errors, [{ message: 'token revoked', extensions: { code: 'UNAUTHENTICATED' } }])
})

t.test('errors: HTTP 200 with extensions.code, 400 only for what is not a GraphQL request', async (t) => {
  const app = await build(t)
  const headers = await authHeaders(app)
  const cases: Array<[string, string, Record<string, unknown> | undefined]> = [
    ['{ users { id } ', 'GRAPHQL_PARSE_FAILED', undefined],
    ['{ users { nope } }', 'GRAPHQL_VALIDATION_FAILED', undefined],
    ['query ($id: ID!) { user(id: $id) { id } }', 'BAD_USER_INPUT', {}],
    ['query ($id: ID!) { user(id: $id) { id } }', 'BAD_USER_INPUT', { id: { nested: true } }],
    ['{"kind": "Document", "definitions": []}', 'GRAPHQL_PARSE_FAILED', undefined]
  ]
  for (const [query, code, variables] of cases) {
    const res = await graphql(app, query, { headers, ...(variables === undefined ? {} : { variables }) })
    t.equal(res.statusCode, 200, query)
    t.same(errorCodes(res), [code], query)
    t.notMatch(JSON.stringify(res.errors), /stack|node_modules|\.js:/, 'no internals')
  }

  const notJson = await app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'application/json' }, payload: '{nope' })
  t.equal(notJson.statusCode, 400)
  t.match(JSON.parse(notJson.body), { errors: [{ message: /not valid JSON/ }] })
  const noQuery = await app.inject({ method: 'POST', url: '/graphql', payload: { variables: {} } })
  t.equal(noQuery.statusCode, 400)
  const wrongShape = await app.inject({ method: 'POST', url: '/graphql', payload: { query: 42 } })
  t.equal(wrongShape.statusCode, 400)
  const batch = await app.inject({ method: 'POST', url: '/graphql', payload: [{ query: '{ __typename }' }, { query: '{ __typename }' }] })
  t.equal(batch.statusCode, 400, 'batched queries are off')
  const text = await app.inject({ method: 'POST', url: '/graphql', headers: { 'content-type': 'text/plain' }, payload: '{ __typename }' })
  t.equal(text.statusCode, 415)

  const get = await app.inject({ url: `/graphql?query=${encodeURIComponent('{ __typename }')}` })
  t.same(JSON.parse(get.body), { data: { __typename: 'Query' } })
  const mutationByGet = await app.inject({ url: `/graphql?query=${encodeURIComponent('mutation { deleteUser(id: "1") }')}` })
  t.equal(mutationByGet.statusCode, 405)

  // A document of more than MAX_DOCUMENT_TOKENS tokens is refused while it is parsed.
  const huge = await graphql(app, `{ ${Array.from({ length: 3000 }, (_, i) => `a${i}: __typename`).join(' ')} }`, { headers })
  t.equal(huge.statusCode, 200)
  t.same(errorCodes(huge), ['GRAPHQL_PARSE_FAILED'])
  t.match(huge.errors?.[0]?.message, /tokens/)

  t.equal((await app.inject({ method: 'POST', url: '/api/graphql', payload: { query: '{ __typename }' } })).statusCode, 404, 'not under a prefix')
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/graphql', payload: { query: '{ __typename }' } })).statusCode, 404, 'not under the REST prefix')
})

t.test('limits: depth, complexity (the cost model of CONTRACT §6), nested limits', async (t) => {
  const app = await build(t)
  const headers = await authHeaders(app)

  const deep = '{ users(limit: 1) { posts(limit: 1) { author { posts(limit: 1) { author { posts(limit: 1) { author { posts(limit: 1) { id } } } } } } } } }'
  const tooDeep = await graphql(app, deep, { headers })
  t.equal(tooDeep.statusCode, 200)
  t.same(errorCodes(tooDeep), ['DEPTH_LIMIT_EXCEEDED'])
  t.equal(tooDeep.data, undefined, 'nothing ran')
  const viaFragments = await graphql(app, `{ users(limit: 1) { ...A } }
    fragment A on User { posts(limit: 1) { author { ...B } } }
    fragment B on User { posts(limit: 1) { author { posts(limit: 1) { author { posts(limit: 1) { id } } } } } }`, { headers })
  t.same(errorCodes(viaFragments), ['DEPTH_LIMIT_EXCEEDED'])
  const eight = await graphql(app, '{ users(limit: 1) { posts(limit: 1) { author { posts(limit: 1) { author { posts(limit: 1) { author { name } } } } } } } }', { headers })
  t.same(eight.errors, undefined, 'depth 8 is allowed')

  const example = '{ users(limit: 20) { posts(limit: 5) { comments { text author { name } } } } }'
  const runs = await graphql(app, example, { headers })
  t.same(runs.errors, undefined, 'the contract\'s example (cost 6121) runs')
  const aliases = `{ ${Array.from({ length: 50 }, (_, i) => `u${i}: users(limit: 100) { posts(limit: 100) { comments { text } } }`).join(' ')} }`
  const tooCostly = await graphql(app, aliases, { headers })
  t.equal(tooCostly.statusCode, 200)
  t.same(errorCodes(tooCostly), ['COMPLEXITY_LIMIT_EXCEEDED'])
  t.match(tooCostly.errors?.[0]?.message, /costs \d+; at most 10000/)

  // The exact count: 6121 for the example; one field more is 6122.
  const strict = await build(t, { graphqlMaxComplexity: 6121 })
  const strictHeaders = await authHeaders(strict)
  t.same((await graphql(strict, example, { headers: strictHeaders })).errors, undefined)
  const plusOne = await graphql(strict, '{ users(limit: 20) { posts(limit: 5) { comments { text author { name } } } } __typename }', { headers: strictHeaders })
  t.match(plusOne.errors, [{ extensions: { code: 'COMPLEXITY_LIMIT_EXCEEDED', cost: 6122 } }])
  const fragmented = await graphql(strict, `{ users(limit: 20) { ...P } __typename }
    fragment P on User { posts(limit: 5) { comments { ...C } } }
    fragment C on Comment { text author { name } }`, { headers: strictHeaders })
  t.match(fragmented.errors, [{ extensions: { cost: 6122 } }], 'fragments count where they are used')

  const variables = 'query ($n: Int, $m: Int = 5) { users(limit: $n) { posts(limit: $m) { comments { text author { name } } } } }'
  t.same((await graphql(app, variables, { variables: { n: 20 }, headers })).errors, undefined)
  t.same(errorCodes(await graphql(app, variables, { variables: { n: 20, m: 50 }, headers })), ['COMPLEXITY_LIMIT_EXCEEDED'], 'limits given as variables count')

  const cyclic = await graphql(app, '{ users { ...A } } fragment A on User { posts { author { ...A } } }', { headers })
  t.same(errorCodes(cyclic), ['GRAPHQL_VALIDATION_FAILED'])

  for (const bad of ['{ users { posts(limit: 0) { id } } }', '{ users { posts(limit: 101) { id } } }', '{ post(id: "1") { comments(limit: -1) { id } } }']) {
    const res = await graphql(app, bad, { headers })
    t.match(res.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'limit' } }], bad)
  }

  const logins = await graphql(app, `mutation { ${Array.from({ length: 3 }, (_, i) => `a${i}: login(email: "x@example.com", password: "guess ${i}") { tokenType }`).join(' ')} }`)
  t.match(logins.errors, [{ message: 'login may be asked once per operation', extensions: { code: 'COMPLEXITY_LIMIT_EXCEEDED' } }], 'no password guessing by aliases')
  const writes = await graphql(app, `mutation { ${Array.from({ length: 11 }, (_, i) => `d${i}: deleteUser(id: "${i + 1}")`).join(' ')} }`, { headers })
  t.match(writes.errors, [{ message: /at most 10 fields/, extensions: { code: 'COMPLEXITY_LIMIT_EXCEEDED' } }])
  t.equal(writes.data, undefined)

  const introspection = await graphql(app, getIntrospectionQuery())
  t.same(introspection.errors, undefined, 'GraphiQL\'s introspection query runs')
  t.ok(introspection.data?.__schema.types.some((type: { name: string }) => type.name === 'DateTime'))
})

t.test('nested lists run one SQL statement per level, never one per item', async (t) => {
  const recorded = recordSql(await testDb())
  const app = await build(t, { db: recorded.db })
  const jitted = await build(t, { db: recorded.db, graphql: { jit: 1 } })
  const headers = await authHeaders(app)
  const db = app.db
  const users = await db.insertInto('users')
    .values(Array.from({ length: 25 }, (_, i) => ({ name: `User ${i}`, email: `u${i}@example.com` })))
    .returning('id').execute()
  const posts = await db.insertInto('posts')
    .values(users.flatMap(({ id }) => Array.from({ length: 7 }, (_, i) => ({ author_id: id, title: `P${i}`, content: 'c' }))))
    .returning(['id', 'author_id']).execute()
  await db.insertInto('comments')
    .values(posts.flatMap(({ id, author_id: authorId }, i) => Array.from({ length: 3 }, (_, j) => ({ post_id: id, author_id: users[(i + j) % users.length]?.id ?? authorId, text: `c${j}` }))))
    .execute()

  const relevant = () => recorded.statements.filter((s) => !/revoked_tokens|persisted_queries/.test(s))
  // Each query twice: as sent (the database alone answers what it can) and executed by GraphQL (the
  // relation engine): the same answer to the byte; `statements` are the engine's, `compiled` the other's.
  const count = async (query: string) => {
    const ask = async (text: string) => {
      recorded.statements.length = 0
      const reply = await app.inject({ method: 'POST', url: '/graphql', headers, payload: { query: text } })
      return { reply, statements: relevant() }
    }
    const sent = await ask(query)
    const executed = await ask(executedByGraphql(query))
    const res = JSON.parse(executed.reply.body)
    t.same(res.errors, undefined, query)
    t.equal(sent.reply.body, executed.reply.body, `the same answer either way: ${query}`)
    t.equal(sent.reply.headers['content-type'], executed.reply.headers['content-type'])
    return { res, statements: executed.statements, compiled: sent.statements }
  }

  const { res, statements, compiled } = await count('{ users(limit: 20) { posts(limit: 5) { comments { text author { name } } } } }')
  t.equal(compiled.length, 1, 'the database alone: one statement answers the whole query')
  t.match(compiled[0], /^select '\[' \|\|/, 'its answer\'s text')
  t.equal(res.data?.users.length, 20)
  t.equal(res.data?.users[0].posts.length, 5)
  t.equal(res.data?.users[0].posts[0].comments.length, 3)
  t.equal(statements.length, 2, 'the users, then their posts, the posts\' comments and the comments\' authors in one statement')
  t.match(statements, [/from "users"/, /from "posts"/])
  t.match(statements[1], /from "comments"/)
  t.match(statements[1], /from "users"/)

  const both = await count('{ users(limit: 20) { posts { author { name } comments(limit: 2) { post { title } author { name } } } } }')
  t.equal(both.statements.length, 2, 'the users, then five relations on three levels in one statement')
  t.equal(both.res.data?.users[3].posts.length, 7)

  t.equal(both.compiled.length, 1)

  const twoLimits = await count('{ users(limit: 20) { a: posts(limit: 1) { id } b: posts(limit: 2) { id } } }')
  t.equal(twoLimits.statements.length, 3, 'answers per response key: one statement per distinct limit, not per user')
  t.equal(twoLimits.compiled.length, 1, 'the database alone answers each response key in the one statement')

  await t.test('one relation under two response keys with different limits: each key gets its own list', async (t) => {
    const aliased = 'query ($a: Int, $b: Int) { users(limit: 2) { few: posts(limit: $a) { id } many: posts(limit: $b) { id title } } }'
    for (const [name, server] of [['graphql-js', app], ['graphql-jit', jitted]] as const) {
      // The same limits first, so that graphql-jit compiles the document; then different ones.
      for (let i = 0; i < 3; i++) {
        const same = await graphql(server, aliased, { variables: { a: 3, b: 3 }, headers })
        t.same(same.data?.users[1].few, same.data?.users[1].many.map(({ id }: { id: string }) => ({ id })), `${name}: the same limits, the same posts`)
      }
      const res = await graphql(server, aliased, { variables: { a: 1, b: 4 }, headers })
      t.same(res.errors, undefined, name)
      t.same(res.data?.users.map((u: { few: unknown[], many: unknown[] }) => [u.few.length, u.many.length]), [[1, 4], [1, 4]], name)
      t.equal(res.data?.users[1].few[0].id, res.data?.users[1].many[0].id, name)
      t.match(res.data?.users[1].many[3].title, /^P\d$/, name)

      const below = await graphql(server, `{ users(limit: 1) { posts(limit: 1) { comments(limit: 1) {
        text one: author { posts(limit: 1) { id } } all: author { name posts(limit: 7) { id } } } } } }`, { headers })
      const comment = below.data?.users[0].posts[0].comments[0]
      t.same([comment?.one.posts.length, comment?.all.posts.length, comment?.all.name], [1, 7, comment?.all.name], `${name}: two levels down`)
      t.equal(comment?.one.posts[0].id, comment?.all.posts[0].id)
    }
  })

  const connection = await count('{ usersConnection(first: 2) { edges { cursor node { name posts(limit: 2) { title comments(limit: 1) { text } } } } } }')
  t.same(connection.res.data?.usersConnection.edges.map((e: { node: { posts: unknown[] } }) => e.node.posts.length), [2, 2], 'a connection\'s nodes have their relations')
  t.equal(connection.res.data?.usersConnection.edges[0].node.posts[0].comments[0].text, 'c0')
  t.equal(connection.statements.length, 2, 'users, then their posts and the posts\' comments')

  const offsetPage = await count('{ users(limit: 3, offset: 2) { name } }')
  t.same(offsetPage.res.data?.users.map((u: { name: string }) => u.name), ['User 2', 'User 3', 'User 4'])
  t.equal(offsetPage.statements.length, 1, 'an offset page of the plain list: its rows, no count')
  t.notMatch(offsetPage.statements[0], /count\(/)
  const offsetNested = await count('{ users(limit: 3, offset: 2) { name posts(limit: 2) { title } } }')
  t.same(offsetNested.res.data?.users, ['User 2', 'User 3', 'User 4'].map((name) => ({ name, posts: [{ title: 'P0' }, { title: 'P1' }] })),
    'with relations: the same users in the same order, each with its own posts')
  t.equal(offsetNested.statements.length, 2)
  t.equal(offsetNested.compiled.length, 1, 'an offset page with relations, from the database alone')

  const narrow = await count('{ users(limit: 2) { posts(limit: 1) { comments { text } } } }')
  const [, nestedSql = ''] = narrow.statements
  t.notMatch(nestedSql, /title|content|created_at/, 'only what the query shows is read')
  t.match(nestedSql, /'"text":'/, 'the statement names what it sends')
  t.notMatch(nestedSql, /"(author|post)_id":/, 'keys are compared in the statement, not sent')
  t.equal(narrow.res.data?.users[0].posts[0].comments[0].text, 'c0')
  t.notMatch(nestedSql, /"id":/, 'nor ids the query does not show')

  const onlyTypes = await count('{ users(limit: 1) { posts(limit: 2) { __typename comments(limit: 1) { __typename } } } }')
  const post = { __typename: 'Post', comments: [{ __typename: 'Comment' }] }
  t.same(onlyTypes.res.data?.users[0].posts, [post, post], 'relations that show no column still have their rows')

  const viaFragments = await count(`{ users(limit: 2) { posts(limit: 1) { ...P comments { ... on Comment { createdAt author { ...U } } } } } }
    fragment P on Post { title updatedAt } fragment U on User { email }`)
  const fragmentPost = viaFragments.res.data?.users[0].posts[0]
  t.equal(fragmentPost?.title, 'P0', 'a field asked in a named fragment is read')
  t.match(fragmentPost?.updatedAt, /^\d{4}-\d\d-\d\dT/)
  t.match(fragmentPost?.comments[0].createdAt, /^\d{4}-\d\d-\d\dT/, 'and in an inline fragment')
  t.match(fragmentPost?.comments[0].author.email, /^u\d+@example\.com$/, 'and in a fragment two levels down')
  t.equal(viaFragments.statements.length, 2)

  t.test('the same once graphql-jit has compiled the document', async (t) => {
    const query = '{ users(limit: 20) { posts(limit: 5) { comments { text author { name } } } } }'
    const runs: GraphqlResponse[] = []
    for (let i = 0; i < 3; i++) {
      recorded.statements.length = 0
      runs.push(await graphql(jitted, executedByGraphql(query), { headers }))
      t.equal(recorded.statements.filter((s) => !/revoked_tokens|persisted_queries/.test(s)).length, 2, `run ${i + 1}`)
    }
    t.same(runs[2], runs[0])
    t.same(runs[0]?.data, res.data)
    const anonymous = await graphql(jitted, query)
    const again = await graphql(jitted, query)
    t.same(again, anonymous)
    t.same(errorCodes(again), ['UNAUTHENTICATED'])
  })
})

t.test('GraphiQL outside production only; the routes are hidden from OpenAPI', async (t) => {
  const dev = await build(t)
  t.equal((await dev.inject({ url: '/graphiql' })).statusCode, 200)
  const spec = JSON.parse((await dev.inject({ url: '/openapi.json' })).body)
  t.notOk(Object.keys(spec.paths ?? {}).some((path) => /graph(ql|iql)/.test(path)))
  const production = await build(t, { nodeEnv: 'production' })
  t.equal((await production.inject({ url: '/graphiql' })).statusCode, 404)
  t.equal((await production.inject({ method: 'POST', url: '/graphql', payload: { query: '{ __typename }' } })).statusCode, 200)
  const without = await build(t, { graphql: false })
  t.equal((await without.inject({ method: 'POST', url: '/graphql', payload: { query: '{ __typename }' } })).statusCode, 404)
})

t.test('rate limiting answers 429 with Retry-After, as in the resource style', async (t) => {
  const app = await build(t, { rateLimitMax: 2 })
  for (let i = 0; i < 2; i++) t.equal((await graphql(app, '{ __typename }')).statusCode, 200)
  const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query: '{ __typename }' } })
  t.equal(res.statusCode, 429)
  t.ok(res.headers['retry-after'])
  t.match(JSON.parse(res.body), { errors: [{ extensions: { code: 'RATE_LIMITED' } }] })
})

t.test('login through GraphQL has the same brute-force limit as POST /auth/login', async (t) => {
  const app = await build(t)
  const victim = await signedIn(app, { email: 'victim@example.com', password: 'the right password' })
  const codes: Array<string | undefined> = []
  for (let attempt = 0; attempt < 12; attempt++) {
    const res = await graphql(app, 'mutation { login(email: "victim@example.com", password: "a guess") { accessToken } }')
    t.equal(res.statusCode, 200)
    codes.push(errorCodes(res)[0])
  }
  t.equal(codes[0], 'UNAUTHENTICATED')
  t.equal(codes[11], 'RATE_LIMITED', 'guessing stops after the limit')
  const rest = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: victim.email, password: victim.password } })
  t.equal(rest.statusCode, 429, 'and the account is limited in both styles')
})
