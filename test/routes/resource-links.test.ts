// Links of a manyToMany relation written through the API (issue 40, point 9), on a declaration of
// the suite's own: tasks watched by users through a join table, and tagged with tags each user reads
// alone. Run on PGlite and, with DATABASE_URL, on a real PostgreSQL server (the races need it).
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, resourceSdl, Type } from '../../index.js'
import { apiClient, body, build, errorCodes, graphql, signedIn } from '../helpers/app.js'
import { connect, listening, subscribe } from '../helpers/subscriptions.js'

const tasks = defineResource({
  name: 'task',
  table: 'tasks',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), title: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['title'],
  relations: {
    // Linked by the task's owner: the default, the task's update rule.
    watchers: { manyToMany: 'user', through: 'task_watchers', key: 'task_id', otherKey: 'user_id', inverse: 'watchedTasks', events: ['linked', 'unlinked'] },
    // Anyone signed in tags any task, with a tag of their own (tags are read by their owners only).
    tags: { manyToMany: 'tag', through: 'task_tags', key: 'task_id', otherKey: 'tag_id', links: 'authenticated' }
  },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' },
  events: ['updated']
})

const tags = defineResource({
  name: 'tag',
  table: 'tags',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['name'],
  // The same join table from the tag's side: a tag another user reads is none of the caller's.
  relations: { tasks: { manyToMany: 'task', through: 'task_tags', key: 'tag_id', otherKey: 'task_id', links: 'authenticated' } },
  auth: { read: 'owner', create: 'authenticated', update: 'owner', delete: 'owner' }
})

// A key of another type: boards named by a uuid, their members users.
const boards = defineResource({
  name: 'board',
  table: 'boards',
  representation: Type.Object({ id: Type.String({ format: 'uuid' }), owner_id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['name'],
  relations: { members: { manyToMany: 'user', through: 'board_members', key: 'board_id', otherKey: 'user_id' } },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' }
})

const migrations = {
  '0001_links': {
    async up (db: Kysely<any>) {
      await sql`create table tasks (id serial primary key, owner_id integer not null references users (id) on delete cascade, title text not null)`.execute(db)
      await sql`create table tags (id serial primary key, owner_id integer not null references users (id) on delete cascade, name text not null)`.execute(db)
      await sql`create table task_watchers (
        task_id integer not null references tasks (id) on delete cascade,
        user_id integer not null references users (id) on delete cascade,
        primary key (task_id, user_id))`.execute(db)
      await sql`create table boards (id uuid primary key default gen_random_uuid(), owner_id integer not null references users (id) on delete cascade, name text not null)`.execute(db)
      await sql`create table board_members (board_id uuid not null references boards (id) on delete cascade, user_id integer not null references users (id) on delete cascade, primary key (board_id, user_id))`.execute(db)
      // No unique key: one row per link is the API's to keep.
      await sql`create table task_tags (
        task_id integer not null references tasks (id) on delete cascade,
        tag_id integer not null references tags (id) on delete cascade)`.execute(db)
    }
  }
}

async function setUp (t: Parameters<typeof build>[0], listen = false) {
  const options = { resources: [tasks, tags, boards], migrations }
  const { app, url } = listen ? await listening(t, options) : { app: await build(t, options), url: '' }
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const asAnn = apiClient(app, ann.headers)
  const asBob = apiClient(app, bob.headers)
  const task = body<{ id: number }>(await asAnn('POST', '/tasks', { title: 'Dig' }))
  return { app, url, ann, bob, asAnn, asBob, anonymous: apiClient(app), task }
}

type Db = Kysely<any>
const linksOf = async (app: { db: unknown }, table: string): Promise<unknown[]> =>
  (await (app.db as Db).selectFrom(table).selectAll().orderBy('task_id').execute())

t.test('REST: PUT makes a link (201, then 200: idempotent), DELETE removes it (204, then 404)', async (t) => {
  const { app, ann, bob, asAnn, task } = await setUp(t)
  const made = await asAnn('PUT', `/tasks/${task.id}/watchers/${bob.id}`)
  t.same([made.statusCode, body(made)], [201, { task_id: task.id, user_id: bob.id }], 'made: the link')
  const again = await asAnn('PUT', `/tasks/${task.id}/watchers/${bob.id}`)
  t.same([again.statusCode, body(again)], [200, { task_id: task.id, user_id: bob.id }], 'there already: 200, nothing changed')
  t.same(await linksOf(app, 'task_watchers'), [{ task_id: task.id, user_id: bob.id }], 'one row')
  await asAnn('PUT', `/tasks/${task.id}/watchers/${ann.id}`)
  t.same(body<{ data: Array<{ id: number }> }>(await asAnn('GET', `/tasks/${task.id}/watchers`)).data.map(({ id }) => id), [ann.id, bob.id], 'the nested list reads them')
  t.same(body<{ data: Array<{ id: number }> }>(await asAnn('GET', `/users/${bob.id}/watchedTasks`)).data.map(({ id }) => id), [task.id], 'and the inverse')

  const removed = await asAnn('DELETE', `/tasks/${task.id}/watchers/${bob.id}`)
  t.same([removed.statusCode, removed.body], [204, ''])
  const gone = await asAnn('DELETE', `/tasks/${task.id}/watchers/${bob.id}`)
  t.same([gone.statusCode, body(gone)], [404, { error: 'task\'s watcher not found' }], 'no such link')
  t.same(await linksOf(app, 'task_watchers'), [{ task_id: task.id, user_id: ann.id }])

  const noUser = await asAnn('PUT', `/tasks/${task.id}/watchers/999999`)
  t.same([noUser.statusCode, body(noUser)], [404, { error: 'user not found' }], 'no such user')
  const noTask = await asAnn('PUT', `/tasks/999999/watchers/${bob.id}`)
  t.same([noTask.statusCode, body(noTask)], [404, { error: 'task not found' }], 'no such task')
  const badId = await asAnn('PUT', `/tasks/${task.id}/watchers/abc`)
  t.same([badId.statusCode, body(badId).field], [400, 'userId'], 'an id that is none: 400 naming it')
})

t.test('REST: the links rule on the locked row, the other row read under its own rule (403 and 404, never telling a hidden row)', async (t) => {
  const { app, bob, asAnn, asBob, anonymous, task } = await setUp(t)
  t.equal((await anonymous('PUT', `/tasks/${task.id}/watchers/${bob.id}`)).statusCode, 401, 'no token')
  const notOwner = await asBob('PUT', `/tasks/${task.id}/watchers/${bob.id}`)
  t.same([notOwner.statusCode, body(notOwner)], [403, { error: 'only its owner may change the watchers of this task' }], 'the task\'s owner links its watchers')
  t.equal((await asBob('DELETE', `/tasks/${task.id}/watchers/${bob.id}`)).statusCode, 403)

  const annTag = body<{ id: number }>(await asAnn('POST', '/tags', { name: 'ann' }))
  const bobTag = body<{ id: number }>(await asBob('POST', '/tags', { name: 'bob' }))
  t.equal((await asBob('PUT', `/tasks/${task.id}/tags/${bobTag.id}`)).statusCode, 201, 'links: authenticated — Bob tags Ann\'s task with his own tag')
  const hidden = await asBob('PUT', `/tasks/${task.id}/tags/${annTag.id}`)
  const missing = await asBob('PUT', `/tasks/${task.id}/tags/999999`)
  t.same([hidden.statusCode, body(hidden)], [404, { error: 'tag not found' }], 'Ann\'s tag is not one Bob reads')
  t.same(body(hidden), body(missing), 'answered as a tag that does not exist')
  t.equal((await asAnn('PUT', `/tasks/${task.id}/tags/${annTag.id}`)).statusCode, 201)
  t.same((await asBob('DELETE', `/tasks/${task.id}/tags/${annTag.id}`)).statusCode, 404, 'nor unlinked by him, though the link is there')
  const hiddenParent = await asBob('PUT', `/tags/${annTag.id}/tasks/${task.id}`)
  t.same([hiddenParent.statusCode, body(hiddenParent)], [404, { error: 'tag not found' }], 'this row too: Ann\'s tag is no row of Bob\'s')
  t.equal((await asBob('PUT', `/tags/${bobTag.id}/tasks/${task.id}`)).statusCode, 200, 'the same join table from the other side: the link is there')
  t.same((await linksOf(app, 'task_tags')).length, 2, 'one row per link, without a unique key')
})

t.test('GraphQL: linkTaskWatcher and unlinkTaskWatcher answer the task, its relations selectable; the rules refused alike', async (t) => {
  const { app, ann, bob, task } = await setUp(t)
  const asAnn = async (query: string) => graphql(app, query, { headers: ann.headers })
  const link = `mutation { linkTaskWatcher(taskId: "${task.id}", userId: "${bob.id}") { id watchers { id name } } }`
  t.same((await asAnn(link)).data, { linkTaskWatcher: { id: String(task.id), watchers: [{ id: String(bob.id), name: 'Bob' }] } })
  t.same((await asAnn(link)).data, { linkTaskWatcher: { id: String(task.id), watchers: [{ id: String(bob.id), name: 'Bob' }] } }, 'idempotent')
  t.same(await linksOf(app, 'task_watchers'), [{ task_id: task.id, user_id: bob.id }])
  const unlink = `mutation { unlinkTaskWatcher(taskId: "${task.id}", userId: "${bob.id}") { watchers { id } } }`
  t.same((await asAnn(unlink)).data, { unlinkTaskWatcher: { watchers: [] } })
  t.same(errorCodes(await asAnn(unlink)), ['NOT_FOUND'], 'no such link')

  t.same(errorCodes(await graphql(app, link, { headers: bob.headers })), ['FORBIDDEN'], 'not the task\'s owner')
  t.same(errorCodes(await graphql(app, link)), ['UNAUTHENTICATED'])
  t.same(errorCodes(await asAnn(`mutation { linkTaskWatcher(taskId: "999999", userId: "${bob.id}") { id } }`)), ['NOT_FOUND'])
  t.same(errorCodes(await asAnn(`mutation { linkTaskWatcher(taskId: "${task.id}", userId: "x") { id } }`)), ['BAD_USER_INPUT'])
  const annTag = body<{ id: number }>(await apiClient(app, ann.headers)('POST', '/tags', { name: 'ann' }))
  const tagged = await graphql(app, `mutation { linkTaskTag(taskId: "${task.id}", tagId: "${annTag.id}") { id } }`, { headers: bob.headers })
  t.same([errorCodes(tagged), tagged.errors?.[0]?.message], [['NOT_FOUND'], 'tag not found'], 'a tag Bob does not read')
  t.same(await linksOf(app, 'task_watchers'), [], 'nothing written by the refused calls')

  const sdl = resourceSdl([tasks, tags])
  t.match(sdl, /linkTaskWatcher\(taskId: ID!, userId: ID!\): Task\n/)
  t.match(sdl, /unlinkTagTask\(tagId: ID!, taskId: ID!\): Tag\n/)
  t.match(sdl, /taskWatcherLinked\(taskId: ID, userId: ID\): TaskWatcherLink!/)
  t.notMatch(sdl, /taskTagLinked/, 'events only where declared')
})

t.test('a link event is announced after the commit, to its subscribers, and the task\'s updated is not', async (t) => {
  const { url, ann, bob, asAnn, task } = await setUp(t, true)
  const client = connect(t, url, bob.headers)
  const linked = subscribe<{ taskWatcherLinked: Record<string, unknown> }>(client, `subscription { taskWatcherLinked(taskId: "${task.id}") { taskId userId task { title } watcher { id name } } }`)
  const unlinked = subscribe<{ taskWatcherUnlinked: { userId: string } }>(client, 'subscription { taskWatcherUnlinked { userId } }')
  const updated = subscribe<{ taskUpdated: { title: string } }>(client, 'subscription { taskUpdated { title } }')
  // The subscriptions are in place once a first event reaches each.
  for (let i = 0; (linked.received.length === 0 || updated.received.length === 0) && i < 50; i++) {
    await asAnn('PUT', `/tasks/${task.id}/watchers/${ann.id}`)
    await asAnn('DELETE', `/tasks/${task.id}/watchers/${ann.id}`)
    await asAnn('PATCH', `/tasks/${task.id}`, { title: `warm ${i}` })
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await asAnn('PATCH', `/tasks/${task.id}`, { title: 'Dig' })
  t.equal((await asAnn('PUT', `/tasks/${task.id}/watchers/${bob.id}`)).statusCode, 201)
  t.equal((await asAnn('PUT', `/tasks/${task.id}/watchers/${bob.id}`)).statusCode, 200, 'a link there already is no change: no event')
  t.equal((await asAnn('DELETE', `/tasks/${task.id}/watchers/${bob.id}`)).statusCode, 204)
  await asAnn('PATCH', `/tasks/${task.id}`, { title: 'Rake' })

  t.same(await linked.next((event) => event.taskWatcherLinked.userId === String(bob.id)), {
    taskWatcherLinked: { taskId: String(task.id), userId: String(bob.id), task: { title: 'Dig' }, watcher: { id: String(bob.id), name: 'Bob' } }
  }, 'linked, with both rows')
  t.same(await unlinked.next((event) => event.taskWatcherUnlinked.userId === String(bob.id)), { taskWatcherUnlinked: { userId: String(bob.id) } }, 'unlinked')
  await updated.next((event) => event.taskUpdated.title === 'Dig')
  t.same(await updated.next(), { taskUpdated: { title: 'Rake' } }, 'the task\'s updated: its PATCHes only, never the links between them')
  t.equal(linked.received.filter((event) => event.taskWatcherLinked.userId === String(bob.id)).length, 1, 'one event for two PUTs')
})

t.test('Idempotency-Key on PUT and DELETE replays the first answer', async (t) => {
  const { app, bob, asAnn, task } = await setUp(t)
  const key = { 'idempotency-key': 'link-1' }
  const first = await asAnn('PUT', `/tasks/${task.id}/watchers/${bob.id}`, undefined, key)
  t.equal(first.statusCode, 201)
  const replayed = await asAnn('PUT', `/tasks/${task.id}/watchers/${bob.id}`, undefined, key)
  t.same([replayed.statusCode, replayed.headers['idempotent-replayed'], body(replayed)], [201, 'true', body(first)], 'the first answer again')
  const other = await asAnn('PUT', `/tasks/${task.id}/watchers/${task.id === bob.id ? 1 : bob.id + 1}`, undefined, key)
  t.same([other.statusCode, body(other).field], [422, 'Idempotency-Key'], 'the key with another request')
  const unkey = { 'idempotency-key': 'unlink-1' }
  t.equal((await asAnn('DELETE', `/tasks/${task.id}/watchers/${bob.id}`, undefined, unkey)).statusCode, 204)
  const again = await asAnn('DELETE', `/tasks/${task.id}/watchers/${bob.id}`, undefined, unkey)
  t.same([again.statusCode, again.headers['idempotent-replayed']], [204, 'true'], 'replayed, not a 404')
  t.same(await linksOf(app, 'task_watchers'), [])
  const refused = await asAnn('PUT', `/tasks/999999/watchers/${bob.id}`, undefined, { 'idempotency-key': 'refused' })
  t.equal(refused.statusCode, 404)
})

t.test('a host\'s own code links through the served resource, under the same rules', async (t) => {
  const { app, ann, bob, task } = await setUp(t)
  const served = app.tandemResources(tasks)
  const annCaller = await app.accessTokens.verify(ann.headers.authorization.slice('Bearer '.length))
  const bobCaller = await app.accessTokens.verify(bob.headers.authorization.slice('Bearer '.length))
  const made = await served.link(annCaller, 'watchers', task.id, bob.id)
  t.match(made, { changed: true, row: { id: task.id, title: 'Dig' }, link: { task_id: task.id, user_id: bob.id } })
  t.match(await served.link(annCaller, 'watchers', task.id, bob.id), { changed: false })
  await t.rejects(served.link(bobCaller, 'watchers', task.id, bob.id), { name: 'TandemError', statusCode: 403 }, 'the rule applies to a host\'s caller')
  await t.rejects(served.link(undefined, 'watchers', task.id, bob.id), { name: 'TandemError', statusCode: 401 })
  await t.rejects(served.link(annCaller, 'watchedTasks', task.id, bob.id), { name: 'TandemError', statusCode: 403 }, 'a relation whose links are not written')
  await t.rejects(served.link(annCaller, 'watchers', task.id, -1), { name: 'TandemError', statusCode: 400 }, 'an id that is none')
  t.match(await served.unlink(annCaller, 'watchers', task.id, bob.id), { changed: true })
  await t.rejects(served.unlink(annCaller, 'watchers', task.id, bob.id), { name: 'TandemError', statusCode: 404 })
})

t.test('a uuid key: its paths, ids and GraphQL IDs by its key type', async (t) => {
  const { app, ann, bob, asAnn } = await setUp(t)
  const board = body<{ id: string }>(await asAnn('POST', '/boards', { name: 'Plans' }))
  const made = await asAnn('PUT', `/boards/${board.id.toUpperCase()}/members/${bob.id}`)
  t.same([made.statusCode, body(made)], [201, { board_id: board.id, user_id: bob.id }], 'a uuid in either case, answered as stored')
  const bad = await asAnn('PUT', `/boards/not-a-uuid/members/${bob.id}`)
  t.same([bad.statusCode, body(bad).field], [400, 'id'], 'a malformed uuid is a 400 naming id, never a database error')
  const unlinked = await graphql(app, `mutation { unlinkBoardMember(boardId: "${board.id}", userId: "${bob.id}") { id members { id } } }`, { headers: ann.headers })
  t.same(unlinked.data, { unlinkBoardMember: { id: board.id, members: [] } })
  t.same(errorCodes(await graphql(app, `mutation { linkBoardMember(boardId: "x", userId: "${bob.id}") { id } }`, { headers: ann.headers })), ['BAD_USER_INPUT'])
})

t.test('OpenAPI lists the link routes with their schemas', async (t) => {
  const { app } = await setUp(t)
  const openapi = body<{ paths: Record<string, Record<string, { parameters: Array<{ name: string, in: string }>, responses: Record<string, unknown> }>> }>(await app.inject({ method: 'GET', url: '/openapi.json' }))
  const path = openapi.paths['/api/v1/tasks/{id}/watchers/{userId}']
  t.ok(path, 'the path')
  t.same(Object.keys(path ?? {}).sort(), ['delete', 'put'])
  t.same(path?.put?.parameters.filter((parameter) => parameter.in === 'path').map(({ name }) => name).sort(), ['id', 'userId'])
  t.match(path?.put?.responses, { 200: {}, 201: { content: { 'application/json': { schema: { properties: { task_id: { type: 'integer' }, user_id: { type: 'integer' } } } } } }, 403: {}, 404: {} })
  t.match(path?.delete?.responses, { 204: {}, 404: {} })
  t.ok(openapi.paths['/api/v1/tags/{id}/tasks/{taskId}'], 'every relation with links')
})

t.test('the declaration: links and events of a manyToMany checked at start', async (t) => {
  const base = { name: 'note', table: 'notes', representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), text: Type.String() }), generated: ['id' as const], owner: 'owner_id' as const, writable: ['text' as const] }
  const relation = { manyToMany: 'user', through: 'note_readers', key: 'note_id', otherKey: 'user_id' }
  t.throws(() => defineResource({ ...base, relations: { readers: { ...relation, links: 'everyone' as never } } }), /relations\.readers\.links must be one of authenticated, admin, owner, ownerOrAdmin or false/)
  t.throws(() => defineResource({ ...base, relations: { readers: { ...relation, events: ['changed' as never] } } }), /relations\.readers\.events\[0\] must be/)
  t.throws(() => defineResource({ ...base, relations: { readers: { ...relation, links: false, events: ['linked'] } } }), /events are never announced/)
  t.throws(() => defineResource({ ...base, owner: undefined, auth: { update: 'admin', delete: 'admin' }, relations: { readers: { ...relation, links: 'owner' } } }), /links: the rule owner needs an `owner` field/)
  t.throws(() => defineResource({ ...base, relations: { readers: { ...relation, otherKey: 'note_id' } } }), /key and otherKey are two columns/)
  t.throws(() => defineResource({ ...base, relations: { notes: { ...relation, events: ['linked'] } } }), /four names/, 'the event would carry the note twice')
  t.doesNotThrow(() => defineResource({ ...base, relations: { readers: { ...relation, links: 'admin', events: ['unlinked'] } } }))
})

t.test('races on a real server: two PUTs of one link make one row; a link while its task is deleted leaves no orphan', async (t) => {
  const { app, ann, bob, asAnn } = await setUp(t)
  const tagged = body<{ id: number }>(await asAnn('POST', '/tags', { name: 'mine' }))
  for (let round = 0; round < 10; round++) {
    const task = body<{ id: number }>(await asAnn('POST', '/tasks', { title: `race ${round}` }))
    const both = await Promise.all([asAnn('PUT', `/tasks/${task.id}/watchers/${bob.id}`), asAnn('PUT', `/tasks/${task.id}/tags/${tagged.id}`), asAnn('PUT', `/tasks/${task.id}/watchers/${bob.id}`), asAnn('PUT', `/tasks/${task.id}/tags/${tagged.id}`)])
    t.same(both.map(({ statusCode }) => statusCode).sort(), [200, 200, 201, 201], `round ${round}: one made, one there already, for each relation`)
    const raced = await Promise.all([asAnn('PUT', `/tasks/${task.id}/watchers/${ann.id}`), asAnn('DELETE', `/tasks/${task.id}`)])
    t.ok([201, 404].includes(raced[0].statusCode), `round ${round}: made before the deletion, or 404 after it (${raced[0].statusCode})`)
    t.equal(raced[1].statusCode, 204)
  }
  const db = app.db as Db
  const count = async (table: string) => Number((await sql<{ n: string }>`select count(*) as n from ${sql.table(table)}`.execute(db)).rows[0]?.n)
  t.equal(await count('task_watchers'), 0, 'every link went with its task')
  t.equal(await count('task_tags'), 0)
})
