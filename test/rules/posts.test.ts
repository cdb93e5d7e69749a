// The posts' declaration (rules/posts.ts) in the query style: what REST serves (test/routes/posts.test.ts),
// GraphQL serves from the same declaration and rules, and nested relations below it still load in
// one statement per root.
import { sql } from 'kysely'
import t from 'tap'
import { adminToken, apiClient, body, build, errorCodes, graphql, signedIn, testDb } from '../helpers/app.js'
import { recordSql } from '../helpers/sql-log.js'

type Post = { id: number, author_id: number, title: string }

t.test('posts in GraphQL: lists, pages, updates and deletions under the rules of REST', async (t) => {
  const app = await build(t)
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const asAnn = apiClient(app, ann.headers)
  const first = body<Post>(await asAnn('POST', '/posts', { title: 'On kysely', content: 'c' }))
  await apiClient(app, bob.headers)('POST', '/posts', { title: 'Other', content: 'c' })
  await asAnn('POST', '/posts', { title: 'Second', content: 'more kysely' })

  const titles = async (args: string) => {
    const { data, errors } = await graphql(app, `{ posts(${args}) { title authorId } }`, { headers: bob.headers })
    t.equal(errors, undefined, args)
    return (data?.posts as Array<{ title: string }>).map(({ title }) => title)
  }
  t.same(await titles(`authorId: "${ann.id}"`), ['On kysely', 'Second'])
  t.same(await titles('q: "kysely"'), ['On kysely', 'Second'], 'q searches title and content, as in REST')
  t.same(await titles('limit: 1, offset: 1'), ['Other'])
  const rest = body<{ pagination: { nextCursor: string } }>(await asAnn('GET', '/posts?limit=1'))
  const connection = await graphql(app, `{ postsConnection(first: 5, after: "${rest.pagination.nextCursor}") { edges { node { title } } pageInfo { hasNextPage } } }`, { headers: bob.headers })
  t.same(connection.data, { postsConnection: { edges: [{ node: { title: 'Other' } }, { node: { title: 'Second' } }], pageInfo: { hasNextPage: false } } }, 'a REST cursor continues here')
  t.same(errorCodes(await graphql(app, '{ posts { title } }')), ['UNAUTHENTICATED'])

  const change = (headers: Record<string, string>, input = 'title: "Edited"') => graphql(app, `mutation { updatePost(id: "${first.id}", input: { ${input} }) { title updatedAt author { name } } }`, { headers })
  t.same(errorCodes(await change(bob.headers)), ['FORBIDDEN'], 'only its author or an administrator changes a post')
  await sql`update posts set updated_at = timestamptz '2000-01-01'`.execute(app.db)
  const edited = await change(ann.headers)
  t.match(edited.data, { updatePost: { title: 'Edited', author: { name: 'Ann' } } })
  t.ok(edited.data?.updatePost.updatedAt > '2000-01-01T00:00:00.000Z', 'updated_at moves on a change')
  const unchanged = await change(await adminToken(app), '')
  t.same(unchanged.data?.updatePost.updatedAt, edited.data?.updatePost.updatedAt, 'an empty change answers the post as it is')
  t.match(body(await asAnn('GET', `/posts/${first.id}`)), { title: 'Edited' }, 'REST reads what GraphQL wrote')

  t.same(errorCodes(await graphql(app, `mutation { deletePost(id: "${first.id}") }`, { headers: bob.headers })), ['FORBIDDEN'])
  t.same((await graphql(app, `mutation { deletePost(id: "${first.id}") }`, { headers: ann.headers })).data, { deletePost: true })
  t.equal((await asAnn('GET', `/posts/${first.id}`)).statusCode, 404)
})

t.test('the declared root fields answer posts through the planner: one statement below the root', async (t) => {
  const recorded = recordSql(await testDb())
  const app = await build(t, { db: recorded.db })
  const ann = await signedIn(app, { name: 'Ann' })
  const asAnn = apiClient(app, ann.headers)
  for (const title of ['one', 'two', 'three']) {
    const post = body<Post>(await asAnn('POST', '/posts', { title, content: 'c' }))
    await asAnn('POST', `/posts/${post.id}/comments`, { text: `on ${title}` })
  }
  recorded.statements.length = 0
  const res = await graphql(app, '{ posts { title author { name posts(limit: 1) { title } } comments { text author { name } post { title } } } }', { headers: ann.headers })
  t.equal(res.errors, undefined)
  t.same(res.data?.posts[2], { title: 'three', author: { name: 'Ann', posts: [{ title: 'one' }] }, comments: [{ text: 'on three', author: { name: 'Ann' }, post: { title: 'three' } }] })
  const ours = recorded.statements.filter((statement) => !/revoked_tokens|persisted_queries|login_failures/.test(statement))
  t.equal(ours.length, 1, `the posts and every relation below them in one statement, whose text is the answer: ${ours.join(' | ')}`)

  const aliases = await graphql(app, '{ posts(limit: 1) { few: comments(limit: 1) { text } all: comments(limit: 5) { text } } }', { headers: ann.headers })
  t.same(aliases.data, { posts: [{ few: [{ text: 'on one' }], all: [{ text: 'on one' }] }] }, 'aliases with their own limits, as below users')
})
