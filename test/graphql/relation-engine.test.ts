// One relation engine for every type (issue 38, point 3): a relation of a host's resource is loaded
// as the built-in ones are — everything below a level in one statement, whatever the depth and the
// number of rows — and each target's read rule narrows its rows at every level, in both styles.
import { sql, type Kysely } from 'kysely'
import t, { type Test as TapTest } from 'tap'
import { defineResource, Type } from '../../index.js'
import { adminToken, apiClient, body, build, graphql, signedIn, testDb } from '../helpers/app.js'
import { recordSql } from '../helpers/sql-log.js'
import { executedByGraphql } from '../helpers/executed.js'

// Diaries are read by their owner (and administrators) only; users gain `diaries` through `inverse`.
const diaries = defineResource({
  name: 'diary',
  plural: 'diaries',
  table: 'diaries',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), title: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['title'],
  relations: { owner: { belongsTo: 'user', key: 'owner_id', inverse: 'diaries' } },
  auth: { read: 'ownerOrAdmin', create: 'authenticated', update: 'owner', delete: 'owner' }
})

const migrations = {
  '0001_diaries': {
    async up (db: Kysely<any>) {
      await sql`create table diaries (id serial primary key, owner_id integer not null references users (id) on delete cascade, title text not null)`.execute(db)
      await sql`create index diaries_owner_id_id_idx on diaries (owner_id, id)`.execute(db)
    }
  }
}

async function setUp (t: TapTest) {
  const recorded = recordSql(await testDb())
  const app = await build(t, { db: recorded.db, resources: [diaries], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const admin = await adminToken(app)
  await apiClient(app, ann.headers)('POST', '/diaries', { title: 'Ann\'s' })
  await apiClient(app, bob.headers)('POST', '/diaries', { title: 'Bob\'s' })
  const post = body<{ id: number }>(await apiClient(app, bob.headers)('POST', '/posts', { title: 'by Bob', content: 'c' }))
  await apiClient(app, ann.headers)('POST', `/posts/${post.id}/comments`, { text: 'by Ann' })
  // Each query executed by GraphQL (the relation engine: `statements`) and as sent, which the database
  // alone answers (`compiled`): the same answer either way.
  const counted = async (query: string, headers: { authorization: string }) => {
    const ask = async (text: string) => {
      recorded.statements.length = 0
      const res = await graphql(app, text, { headers })
      if (res.errors !== undefined) throw new Error(`${query}: ${JSON.stringify(res.errors)}`)
      return { res, statements: recorded.statements.filter((statement) => !/revoked_tokens|persisted_queries|login_failures/.test(statement)) }
    }
    const executed = await ask(executedByGraphql(query))
    const sent = await ask(query)
    t.same(sent.res, executed.res, `the same answer either way: ${query}`)
    return { data: executed.res.data as Record<string, any>, statements: executed.statements, compiled: sent.statements }
  }
  return { app, ann, bob, admin, counted }
}

const byName = <U extends { name: string }>(users: U[]): Record<string, any> => Object.fromEntries(users.map((user) => [user.name, user]))

t.test('GraphQL: a target read by its owners only is narrowed at every level, in one statement below the root', async (t) => {
  const { ann, admin, counted } = await setUp(t)
  const query = '{ users(limit: 5) { name diaries(limit: 5) { title } posts(limit: 5) { title comments(limit: 5) { text author { name diaries(limit: 5) { title } } } } } }'
  const asAnn = await counted(query, ann.headers)
  const seen = byName(asAnn.data.users)
  t.same(seen.Ann?.diaries, [{ title: 'Ann\'s' }], 'her own diary, below her')
  t.same(seen.Bob?.diaries, [], 'nothing of Bob\'s, below Bob')
  t.same(seen.Bob?.posts[0]?.comments[0]?.author, { name: 'Ann', diaries: [{ title: 'Ann\'s' }] }, 'three levels further down, the same rule')
  t.equal(asAnn.statements.length, 2, `the users, then everything below them in one statement: ${asAnn.statements.join(' | ')}`)
  const asAdmin = await counted(query, admin)
  t.same(byName(asAdmin.data.users).Bob?.diaries, [{ title: 'Bob\'s' }], 'an administrator reads every diary')
  t.equal(asAdmin.statements.length, 2)
  t.same([asAnn.compiled.length, asAdmin.compiled.length], [1, 1], 'from the database alone, every level in the one statement, narrowed alike')
  t.match(asAnn.compiled[0], /"owner_id" = \$\d/, 'her id narrows the diaries at both levels')
})

t.test('GraphQL: below a host\'s type the same engine goes on into the built-in ones and back, in one statement', async (t) => {
  const { ann, counted } = await setUp(t)
  const deep = await counted('{ diaries { title owner { name posts { title } diaries { title owner { name } } } } }', ann.headers)
  t.same(deep.data.diaries, [{ title: 'Ann\'s', owner: { name: 'Ann', posts: [], diaries: [{ title: 'Ann\'s', owner: { name: 'Ann' } }] } }])
  t.equal(deep.statements.length, 2, `the diaries, then four levels below them in one statement: ${deep.statements.join(' | ')}`)
  t.equal(deep.compiled.length, 1, 'from the database alone, the list and four levels below it in one statement')
})

t.test('REST: include= narrows a target read by its owners only as GraphQL does', async (t) => {
  const { app, ann } = await setUp(t)
  const users = body<{ data: Array<{ name: string, diaries: Array<{ title: string }> }> }>(await apiClient(app, ann.headers)('GET', '/users?include=diaries')).data
  t.same(byName(users).Ann?.diaries.map(({ title }: { title: string }) => title), ['Ann\'s'])
  t.same(byName(users).Bob?.diaries, [])
  const bob = byName(users).Bob as { id: number }
  const nested = body<{ data: unknown[] }>(await apiClient(app, ann.headers)('GET', `/users/${bob.id}/diaries`))
  t.same(nested.data, [], 'the nested list of another user\'s diaries is empty for her')
})
