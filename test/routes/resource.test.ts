// Options of defineResource that the built-in posts needed, for every host: a create that may name
// its owner (ownerOnCreate), a belongsTo every row has (required), a list relation without a nested
// route of its own (route: false), and events that carry the row under the resource's name.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, forbidden, resourceSdl, Type } from '../../index.js'
import { adminToken, apiClient, body, build, errorCodes, graphql, signedIn } from '../helpers/app.js'

const topics = defineResource({
  name: 'topic',
  table: 'topics',
  representation: Type.Object({ id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  writable: ['name'],
  relations: { memos: { hasMany: 'memo', key: 'topic_id', route: false } },
  auth: { create: 'admin' },
  emptyPatch: 'refused'
})

const memos = defineResource({
  name: 'memo',
  table: 'memos',
  representation: Type.Object({
    id: Type.Integer(),
    writer_id: Type.Integer({ minimum: 1 }),
    topic_id: Type.Union([Type.Integer(), Type.Null()]),
    text: Type.String({ minLength: 1 })
  }),
  generated: ['id'],
  owner: 'writer_id',
  ownerOnCreate (caller, named) {
    if (named !== undefined && named !== caller.sub && caller.role !== 'admin') throw forbidden('only an administrator may write as another user')
    return named ?? caller.sub
  },
  writable: ['topic_id', 'text'],
  relations: {
    writer: { belongsTo: 'user', key: 'writer_id', required: true },
    topic: { belongsTo: 'topic', key: 'topic_id' }
  },
  events: ['created']
})

const migrations = {
  '0001_memos': {
    async up (db: Kysely<any>) {
      await sql`create table topics (id serial primary key, name text not null)`.execute(db)
      await sql`create table memos (
        id serial primary key,
        writer_id integer not null references users (id) on delete cascade,
        topic_id integer references topics (id) on delete cascade,
        text text not null)`.execute(db)
    }
  }
}

async function setUp (t: Parameters<typeof build>[0]) {
  const app = await build(t, { resources: [topics, memos], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const admin = await adminToken(app)
  return { app, ann, bob, admin, asAnn: apiClient(app, ann.headers), asAdmin: apiClient(app, admin) }
}

t.test('ownerOnCreate: a create names its owner as the declaration allows, in both styles', async (t) => {
  const { app, ann, bob, admin, asAnn, asAdmin } = await setUp(t)
  t.match(body(await asAnn('POST', '/memos', { text: 'mine' })), { writer_id: ann.id }, 'left out: the caller')
  t.match(body(await asAnn('POST', '/memos', { text: 'mine too', writer_id: ann.id })), { writer_id: ann.id }, 'naming oneself')
  const refused = await asAnn('POST', '/memos', { text: 'as Bob', writer_id: bob.id })
  t.same([refused.statusCode, body(refused)], [403, { error: 'only an administrator may write as another user' }], 'the rule refuses')
  const forBob = await asAdmin('POST', '/memos', { text: 'for Bob', writer_id: bob.id })
  t.same([forBob.statusCode, body(forBob).writer_id], [201, bob.id], 'the rule allows')
  t.equal(body(await asAnn('POST', '/memos', { text: 'x', writer_id: 0 })).field, 'writer_id', 'the owner\'s own schema checks it')
  const moved = await asAnn('PUT', `/memos/${String(body(forBob).id)}`, { text: 'x', topic_id: null, writer_id: ann.id })
  t.equal(body(moved).field, 'writer_id', 'only a create names it')
  t.same((await sql<{ n: number }>`select count(*)::int as n from memos where writer_id = ${bob.id}`.execute(app.db)).rows, [{ n: 1 }], 'Bob has the one the rule allowed')

  const topic = body<{ id: number }>(await asAdmin('POST', '/topics', { name: 'news' }))
  const made = await graphql(app, `mutation { createMemo(input: {text: "by GraphQL", topicId: "${topic.id}", writerId: "${bob.id}"}) { writerId topicId writer { name } } }`, { headers: admin })
  t.same(made.data, { createMemo: { writerId: String(bob.id), topicId: String(topic.id), writer: { name: 'Bob' } } }, 'ID inputs arrive as the integers the schema wants')
  t.same(errorCodes(await graphql(app, `mutation { createMemo(input: {text: "x", writerId: "${bob.id}"}) { id } }`, { headers: ann.headers })), ['FORBIDDEN'])
  const badId = await graphql(app, 'mutation { createMemo(input: {text: "x", writerId: "abc"}) { id } }', { headers: ann.headers })
  t.match(badId.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'writerId' } }])
})

t.test('an empty PATCH answers the row unchanged by default, in both styles; emptyPatch: refused keeps the 400 (issue 38)', async (t) => {
  const { app, ann, bob, admin, asAnn, asAdmin } = await setUp(t)
  const memo = body<{ id: number }>(await asAnn('POST', '/memos', { text: 'as it was' }))
  const empty = await asAnn('PATCH', `/memos/${memo.id}`, {})
  t.same([empty.statusCode, body(empty)], [200, memo], 'the row as it is (before: a 400)')
  t.equal((await apiClient(app, bob.headers)('PATCH', `/memos/${memo.id}`, {})).statusCode, 403, 'after the rules of any change')
  const updated = await graphql(app, `mutation { updateMemo(id: "${memo.id}", input: {}) { id text } }`, { headers: ann.headers })
  t.same([updated.data, updated.errors], [{ updateMemo: { id: String(memo.id), text: 'as it was' } }, undefined], 'GraphQL alike')

  const topic = body<{ id: number }>(await asAdmin('POST', '/topics', { name: 'news' }))
  const refused = await asAdmin('PATCH', `/topics/${topic.id}`, {})
  t.same([refused.statusCode, body(refused)], [400, { error: 'body must NOT have fewer than 1 properties' }], 'refused, as it asks')
  t.same(errorCodes(await graphql(app, `mutation { updateTopic(id: "${topic.id}", input: {}) { name } }`, { headers: admin })), ['BAD_USER_INPUT'])
})

t.test('required, route: false, and events named after the resource', async (t) => {
  const { app, ann, asAnn, asAdmin } = await setUp(t)
  const sdl = resourceSdl([topics, memos])
  t.match(sdl, /\n {2}writer: User!\n/, 'a required belongsTo is not null in GraphQL')
  t.match(sdl, /\n {2}topic: Topic\n/, 'others may be')
  t.match(sdl, /input CreateMemoInput \{\n {2}topicId: ID\n {2}text: String!\n {2}"Left out: the caller."\n {2}writerId: ID\n\}/, 'the owner a create may name, last')
  t.notMatch(sdl, /input CreateTopicInput \{[^}]*Id/, 'a create that may not name its owner does not take it')

  const heard: unknown[] = []
  app.tandemEvents.emitter.on('memoCreated', (message, done) => { heard.push(message.payload); done() })
  const topic = body<{ id: number }>(await asAdmin('POST', '/topics', { name: 'news' }))
  const memo = body<{ id: number }>(await asAnn('POST', '/memos', { text: 'on topic', topic_id: topic.id }))
  await new Promise((resolve) => setImmediate(resolve))
  t.match(heard, [{ memo: { id: memo.id, writer_id: ann.id, text: 'on topic' } }], 'the row under the resource\'s name')

  t.equal((await asAnn('GET', `/topics/${topic.id}/memos`)).statusCode, 404, 'no nested route of its own')
  t.match(body(await asAnn('GET', `/topics/${topic.id}?include=memos`)), { memos: [{ id: memo.id }] }, 'still included')
  t.same((await graphql(app, `{ topic(id: "${topic.id}") { memos { text writer { name } } } }`, { headers: ann.headers })).data, { topic: { memos: [{ text: 'on topic', writer: { name: 'Ann' } }] } })
})

t.test('mistaken uses of these options fail at start, naming the mistake', async (t) => {
  const declare = (extra: object) => () => defineResource({ ...memos.declaration, ...extra } as Parameters<typeof defineResource>[0])
  t.throws(declare({ owner: undefined, auth: {} }), /ownerOnCreate needs an `owner` column of the row/)
  t.throws(declare({ ownerOnCreate: 'admin' }), /ownerOnCreate must be a function/)
  t.throws(declare({ relations: { topic: { belongsTo: 'topic', key: 'topic_id', required: true } } }), /relation topic: required needs a key that is never null, and topic_id may be/)
  t.throws(declare({ relations: { writer: { belongsTo: 'user', key: 'writer_id', route: false } } }), /relations\.writer\.route is not an option of a belongsTo relation/)
  t.throws(() => defineResource({ ...topics.declaration, relations: { memos: { hasMany: 'memo', key: 'topic_id', required: true } } } as Parameters<typeof defineResource>[0]), /relations\.memos\.required is not an option of a hasMany relation/)
  const privateTopics = defineResource({ ...topics.declaration, owner: 'id', auth: { read: 'owner' } } as unknown as Parameters<typeof defineResource>[0])
  const onPrivate = defineResource({ ...memos.declaration, relations: { topic: { belongsTo: 'topic', key: 'writer_id', required: true } } } as Parameters<typeof defineResource>[0])
  await t.rejects(build(t, { resources: [privateTopics, onPrivate], migrations }), /relation topic: required, but topic is read by its owners only/)
})
