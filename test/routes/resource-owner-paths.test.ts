// Rules that look through a relation (issue 40, point 8): a task is its assignee's, its project's
// owner's, and its watchers' (a join table), declared as `owner: ['assignee_id', 'project.owner_id',
// 'watchers']`; a note is its project's owner's alone. Reads are narrowed, writes checked on the
// locked row, relations narrowed at every level, in both styles. On PGlite, and with DATABASE_URL on a
// real PostgreSQL server, where a race checks that the locked-row check holds.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, Type } from '../../index.js'
import type { AccessUser } from '../../plugins/auth.js'
import type { Db } from '../../db/connect.js'
import { apiClient, body, build, errorCodes, graphql, signedIn } from '../helpers/app.js'
import { serverUrl, testDb } from '../helpers/database.js'
import { executedByGraphql } from '../helpers/executed.js'
import { recordSql } from '../helpers/sql-log.js'

const projects = defineResource({
  name: 'project',
  table: 'projects',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['name'],
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' }
})

const tasks = defineResource({
  name: 'task',
  table: 'tasks',
  representation: Type.Object({ id: Type.Integer(), project_id: Type.Integer(), assignee_id: Type.Integer(), title: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: ['assignee_id', 'project.owner_id', 'watchers'],
  writable: ['project_id', 'title'],
  filters: ['project_id'],
  relations: {
    project: { belongsTo: 'project', key: 'project_id', inverse: 'tasks' },
    watchers: { manyToMany: 'user', through: 'task_watchers', key: 'task_id', otherKey: 'user_id' }
  },
  auth: { read: 'owner', create: 'authenticated', update: 'owner', delete: 'ownerOrAdmin' },
  bulk: { update: 'owner' },
  events: ['updated']
})

// Owned through the project alone: created only in a project of one's own; another's is a 403.
const notes = defineResource({
  name: 'note',
  table: 'notes',
  representation: Type.Object({ id: Type.Integer(), project_id: Type.Integer(), text: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'project.owner_id',
  writable: ['project_id', 'text'],
  relations: { project: { belongsTo: 'project', key: 'project_id', inverse: 'notes' } },
  auth: { read: 'owner', create: 'authenticated', update: 'owner', delete: 'owner' },
  othersRows: 'forbidden'
})

const migrations = {
  '0001_tracker': {
    async up (db: Kysely<any>) {
      await sql`create table projects (id serial primary key, owner_id integer not null references users (id) on delete cascade, name text not null)`.execute(db)
      await sql`create table tasks (id serial primary key, project_id integer not null references projects (id) on delete cascade, assignee_id integer not null references users (id) on delete cascade, title text not null)`.execute(db)
      await sql`create index tasks_project on tasks (project_id)`.execute(db)
      await sql`create index tasks_assignee on tasks (assignee_id)`.execute(db)
      await sql`create table task_watchers (task_id integer not null references tasks (id) on delete cascade, user_id integer not null references users (id) on delete cascade, primary key (task_id, user_id))`.execute(db)
      await sql`create table notes (id serial primary key, project_id integer not null references projects (id) on delete cascade, text text not null)`.execute(db)
    }
  }
}

type Row = { id: number }
const user = (id: number): AccessUser => ({ sub: id, role: 'user', jti: 'j', exp: 0, iat: 0, ver: 0 })

/**
 * Ann owns the project; Bob is assigned `bobs` (Ann made it: its assignee set by hand, as a host's
 * code would); Dave watches `watched`; Carl has nothing to do with any of them.
 */
async function setUp (t: Parameters<typeof build>[0], db?: Db) {
  const app = await build(t, { resources: [projects, tasks, notes], migrations, ...db === undefined ? {} : { db } })
  const [ann, bob, carl, dave] = [await signedIn(app, { name: 'Ann' }), await signedIn(app, { name: 'Bob' }), await signedIn(app, { name: 'Carl' }), await signedIn(app, { name: 'Dave' })]
  const [asAnn, asBob, asCarl, asDave] = [ann, bob, carl, dave].map(({ headers }) => apiClient(app, headers)) as [ReturnType<typeof apiClient>, ReturnType<typeof apiClient>, ReturnType<typeof apiClient>, ReturnType<typeof apiClient>]
  const project = body<Row>(await asAnn('POST', '/projects', { name: 'Tracker' }))
  const made = async (title: string) => body<Row & { assignee_id: number }>(await asAnn('POST', '/tasks', { project_id: project.id, title }))
  const [anns, bobs, watched] = [await made('Ann\'s'), await made('Bob\'s'), await made('watched')]
  await sql`update tasks set assignee_id = ${bob.id} where id = ${bobs.id}`.execute(app.db)
  await sql`insert into task_watchers (task_id, user_id) values (${watched.id}, ${dave.id})`.execute(app.db)
  return { app, ann, bob, carl, dave, asAnn, asBob, asCarl, asDave, project, anns, bobs, watched }
}

const titles = (res: { body: string }) => (JSON.parse(res.body) as { data: Array<{ title: string }> }).data.map(({ title }) => title)

t.test('start: each owner path is checked, the error naming the option', async (t) => {
  const base = { name: 'thing', table: 'things', representation: Type.Object({ id: Type.Integer(), project_id: Type.Integer(), user_id: Type.Integer(), other_id: Type.Integer() }), generated: ['id' as const], writable: [] as never[], auth: { read: 'owner' as const, create: false as const, update: false as const, delete: false as const } }
  t.throws(() => defineResource({ ...base, owner: 'nothing' }), /defineResource\("thing"\): owner names nothing, which is neither a field nor a relation/)
  t.throws(() => defineResource({ ...base, owner: 'project.owner_id' }), /owner: project.owner_id names the relation project, which is not declared/)
  t.throws(() => defineResource({ ...base, owner: ['user_id', 'other_id'] }), /owner names 2 columns of the row \(user_id, other_id\)/)
  t.throws(() => defineResource({ ...base, owner: 'project', relations: { project: { hasMany: 'project', key: 'thing_id' } } }), /owner: project goes through project, which is not a belongsTo or a manyToMany relation/)
  t.throws(() => defineResource({ ...base, owner: [] as unknown as 'user_id' }), /owner/)
  // Regression: a user a link names owns the row, so a links rule that admits others let anyone link themselves and then change or delete it.
  const watched = { ...base, owner: 'watchers', relations: { watchers: { manyToMany: 'user', through: 'thing_watchers', key: 'thing_id', otherKey: 'user_id' } } }
  for (const links of ['authenticated', undefined] as const) {
    const declared = { ...watched, auth: { ...base.auth, update: 'authenticated' as const }, relations: { watchers: { ...watched.relations.watchers, ...links === undefined ? {} : { links } } } }
    t.throws(() => defineResource(declared as Parameters<typeof defineResource>[0]), /relation watchers: it names owners of the row, so its links rule is 'owner', 'ownerOrAdmin', 'admin' or false/, `links ${links ?? 'from update: authenticated'} refused`)
  }
  const throughProjects = { ...base, owner: 'projects.owner_id', relations: { projects: { manyToMany: 'project', through: 'thing_projects', key: 'thing_id', otherKey: 'project_id', links: 'authenticated' } } }
  t.throws(() => defineResource(throughProjects as Parameters<typeof defineResource>[0]), /relation projects: it names owners of the row/, 'an owner through a linked row\'s column too')
  for (const links of ['owner', 'ownerOrAdmin', 'admin', false] as const) {
    t.doesNotThrow(() => defineResource({ ...watched, relations: { watchers: { ...watched.relations.watchers, links } } } as Parameters<typeof defineResource>[0]), `links ${String(links)} taken`)
  }
  // What only the targets tell, at start.
  const missing = defineResource({ ...base, owner: 'project.boss_id', relations: { project: { belongsTo: 'project', key: 'project_id' } } })
  await t.rejects(build(t, { resources: [projects, missing] }), /defineResource\("thing"\): owner: project.boss_id: project has no field boss_id/)
  const unowned = defineResource({ ...base, owner: 'project', relations: { project: { belongsTo: 'thing2', key: 'project_id' } } })
  const thing2 = defineResource({ name: 'thing2', table: 'things2', representation: Type.Object({ id: Type.Integer() }), generated: ['id'], writable: [], auth: { create: false, update: false, delete: false } })
  await t.rejects(build(t, { resources: [thing2, unowned] }), /owner: project: thing2 is neither the users nor a resource whose owner is one of its columns/)
  t.throws(() => defineResource({ ...base, owner: 'project.owner_id', relations: { project: { belongsTo: 'project', key: 'project_id' } }, fields: { other_id: { read: 'owner' } } }), /fields: a field read rule needs an `owner` that is one column of the row/)
})

t.test('REST: the assignee, the project\'s owner and a watcher may change a task; another user gets a 404', async (t) => {
  const { app, asAnn, asBob, asCarl, asDave, anns, bobs, watched, project } = await setUp(t)
  t.match(body(await asBob('PATCH', `/tasks/${bobs.id}`, { title: 'by the assignee' })), { title: 'by the assignee' })
  t.match(body(await asAnn('PATCH', `/tasks/${bobs.id}`, { title: 'by the project\'s owner' })), { title: 'by the project\'s owner' })
  t.match(body(await asAnn('PUT', `/tasks/${bobs.id}`, { project_id: project.id, title: 'replaced' })), { title: 'replaced' })
  t.match(body(await asDave('PATCH', `/tasks/${watched.id}`, { title: 'by a watcher' })), { title: 'by a watcher' })
  for (const [label, res] of [
    ['another\'s PATCH', await asCarl('PATCH', `/tasks/${bobs.id}`, { title: 'taken' })],
    ['another\'s PUT', await asCarl('PUT', `/tasks/${bobs.id}`, { project_id: 1, title: 'taken' })],
    ['another\'s DELETE', await asCarl('DELETE', `/tasks/${bobs.id}`)],
    ['another\'s GET', await asCarl('GET', `/tasks/${bobs.id}`)],
    ['the assignee of another task', await asBob('PATCH', `/tasks/${anns.id}`, { title: 'taken' })],
    ['a watcher of another task', await asDave('GET', `/tasks/${bobs.id}`)]
  ] as const) t.same([res.statusCode, body(res)], [404, { error: 'task not found' }], label)
  t.same((await sql<{ title: string }>`select title from tasks order by id`.execute(app.db)).rows.map(({ title }) => title), ['Ann\'s', 'replaced', 'by a watcher'], 'nothing else changed')
  t.equal((await asAnn('DELETE', `/tasks/${bobs.id}`)).statusCode, 204, 'the project\'s owner deletes it')
})

t.test('REST: the links of the watchers are written by the task\'s owners by any path, checked on the locked row', async (t) => {
  const { app, asAnn, asCarl, asDave, carl, dave, bobs, watched } = await setUp(t)
  t.equal((await asAnn('PUT', `/tasks/${bobs.id}/watchers/${carl.id}`)).statusCode, 201, 'the project\'s owner')
  t.equal((await asDave('PUT', `/tasks/${watched.id}/watchers/${carl.id}`)).statusCode, 201, 'a watcher')
  const refused = await asDave('DELETE', `/tasks/${bobs.id}/watchers/${carl.id}`)
  t.same([refused.statusCode, body(refused)], [404, { error: 'task not found' }], 'another\'s task: as no such task')
  t.equal((await asCarl('GET', `/tasks/${bobs.id}`)).statusCode, 200, 'Carl, now a watcher, reads it')
  t.same((await sql<{ n: number }>`select count(*)::int as n from task_watchers where user_id = ${dave.id}`.execute(app.db)).rows, [{ n: 1 }])
})

t.test('REST: lists, counts, cursors and filters are narrowed to the rows the caller owns by any path', async (t) => {
  const { asAnn, asBob, asCarl, asDave, project } = await setUp(t)
  t.same(titles(await asAnn('GET', '/tasks')), ['Ann\'s', 'Bob\'s', 'watched'], 'the project\'s owner: every task of it')
  t.same(titles(await asBob('GET', '/tasks')), ['Bob\'s'], 'the assignee: theirs')
  t.same(titles(await asDave('GET', '/tasks')), ['watched'], 'a watcher: the one they watch')
  t.same(titles(await asCarl('GET', '/tasks')), [], 'another user: none')
  t.match(body(await asBob('GET', '/tasks?total=true')), { pagination: { total: 1 } }, 'counted as narrowed')
  const first = body<{ pagination: { nextCursor: string } }>(await asAnn('GET', '/tasks?limit=1'))
  t.same(titles(await asAnn('GET', `/tasks?limit=1&cursor=${encodeURIComponent(first.pagination.nextCursor)}`)), ['Bob\'s'], 'a cursor continues the narrowed list')
  t.equal((await asBob('GET', `/tasks?limit=1&cursor=${encodeURIComponent(first.pagination.nextCursor)}`)).statusCode, 400, 'and is bound to its caller\'s narrowing')
  t.same(titles(await asBob('GET', `/tasks?project_id=${project.id}`)), ['Bob\'s'], 'a filter within them')
})

t.test('REST: nested routes and include= are narrowed at every level', async (t) => {
  const { asBob, asCarl, project } = await setUp(t)
  t.same(titles(await asBob('GET', `/projects/${project.id}/tasks`)), ['Bob\'s'], 'the project\'s tasks, as Bob may read them')
  t.same(titles(await asCarl('GET', `/projects/${project.id}/tasks`)), [])
  const included = body<{ data: Array<{ tasks: Array<{ title: string }>, notes: unknown[] }> }>(await asBob('GET', '/projects?include=tasks,notes'))
  t.same(included.data.map((row) => [row.tasks.map(({ title }) => title), row.notes]), [[['Bob\'s'], []]])
})

t.test('REST: a change by filter changes the rows the caller owns, checked on each locked row', async (t) => {
  const { app, asBob, asCarl, project, bobs } = await setUp(t)
  t.same(body(await asBob('PATCH', `/tasks?project_id=${project.id}`, { title: 'all mine' })), { count: 1, ids: [bobs.id] })
  t.same(body(await asCarl('PATCH', `/tasks?project_id=${project.id}`, { title: 'all mine' })), { count: 0, ids: [] })
  t.same((await sql<{ title: string }>`select title from tasks order by id`.execute(app.db)).rows.map(({ title }) => title), ['Ann\'s', 'all mine', 'watched'])
})

t.test('REST: owned through the parent alone, a create names a parent its caller owns; another\'s row is a 403 with othersRows', async (t) => {
  const { app, asAnn, asBob, project } = await setUp(t)
  const refused = await asBob('POST', '/notes', { project_id: project.id, text: 'in Ann\'s project' })
  t.same([refused.statusCode, body(refused)], [422, { error: 'project_id refers to something that does not exist', field: 'project_id' }])
  const bobsProject = body<Row>(await asBob('POST', '/projects', { name: 'Bob\'s' }))
  t.equal((await asBob('POST', '/notes', { project_id: bobsProject.id, text: 'mine' })).statusCode, 201)
  const note = body<Row>(await asAnn('POST', '/notes', { project_id: project.id, text: 'Ann\'s' }))
  t.equal((await asBob('PATCH', `/notes/${note.id}`, { project_id: bobsProject.id })).statusCode, 403, 'another\'s: 403 (othersRows: forbidden)')
  t.equal((await asBob('GET', `/notes/${note.id}`)).statusCode, 403)
  t.equal((await asAnn('PATCH', `/notes/${note.id}`, { project_id: bobsProject.id })).statusCode, 422, 'moved to a project its caller does not own')
  t.same((await sql<{ n: number }>`select count(*)::int as n from notes`.execute(app.db)).rows, [{ n: 2 }])
})

t.test('GraphQL: the same rules, lists and nested relations, answered by the database alone or executed', async (t) => {
  const recorded = recordSql(await testDb())
  const { app, ann, bob, carl, bobs } = await setUp(t, recorded.db)
  const ask = async (query: string, headers: { authorization: string }) => await graphql(app, query, { headers })
  t.same((await ask(`mutation { updateTask(id: "${bobs.id}", input: { title: "by Bob" }) { title } }`, bob.headers)).data, { updateTask: { title: 'by Bob' } })
  t.same((await ask(`mutation { updateTask(id: "${bobs.id}", input: { title: "by Ann" }) { title } }`, ann.headers)).data, { updateTask: { title: 'by Ann' } })
  const carls = await ask(`mutation { updateTask(id: "${bobs.id}", input: { title: "taken" }) { title } }`, carl.headers)
  t.same(errorCodes(carls), ['NOT_FOUND'], 'another user: as no such task')
  t.same((await ask(`mutation { deleteTask(id: "${bobs.id}") }`, carl.headers)).data, { deleteTask: false })

  for (const query of ['{ tasks { title } projects { name tasks { title } notes { text } } }', '{ projects { tasks { title project { name } } } }']) {
    for (const [who, headers] of [['Bob', bob.headers], ['Carl', carl.headers], ['Ann', ann.headers]] as const) {
      recorded.statements.length = 0
      const alone = await ask(query, headers)
      const statements = recorded.statements.filter((statement) => !/revoked_tokens|persisted_queries|login_failures/.test(statement)).length
      const executed = await ask(executedByGraphql(query), headers)
      t.same(alone, executed, `${who}: the database's answer is the executed one`)
      t.ok(statements <= 2, `${who}: one statement per root field (${statements})`)
      const tasksOf = (alone.data?.projects as Array<{ tasks: Array<{ title: string }> }>)[0]?.tasks.map(({ title }) => title)
      t.same(tasksOf, who === 'Bob' ? ['by Ann'] : who === 'Carl' ? [] : ['Ann\'s', 'by Ann', 'watched'], `${who}: Project.tasks narrowed`)
    }
  }
  const connection = await ask('{ tasksConnection(first: 5) { edges { node { title } } } }', bob.headers)
  t.same(connection.data, { tasksConnection: { edges: [{ node: { title: 'by Ann' } }] } })
})

t.test('Subscriptions: a caller narrowed to their own tasks is refused (the event\'s row cannot tell); OpenAPI says who may call', async (t) => {
  const { app, bob } = await setUp(t)
  t.throws(() => app.tandemResources('task').hearing(user(bob.id), []), { statusCode: 403, message: /heard by subscribers who read every task only/ })
  t.doesNotThrow(() => app.tandemResources('project').hearing(user(bob.id), []), 'an owner of columns alone: as before')
  const document = body<{ paths: Record<string, Record<string, { description?: string }>> }>(await app.inject({ url: '/openapi.json' }))
  const operations = document.paths['/api/v1/tasks/{id}'] ?? {}
  t.match(operations.patch?.description, /Only the task's owner \(its assignee_id, the owner_id of its project or a user its watchers link to it\) may call it/)
  t.match(operations.delete?.description, /or an administrator may call it/)
  t.match(document.paths['/api/v1/tasks']?.get?.description, /answered only the tasks whose owner they are/)
  t.match(document.paths['/api/v1/notes']?.post?.description, /The project named must be one the caller owns/)
})

t.test('A race on the real server: the project changes owner while an update waits; the locked-row check holds', { skip: serverUrl() === undefined && 'needs DATABASE_URL (PGlite runs one statement at a time)' }, async (t) => {
  const { app, asAnn, bobs, carl, project } = await setUp(t)
  // The project is given to Carl in a transaction held open: Ann's change of Bob's task waits for it.
  const held = await app.db.startTransaction().execute()
  await sql`update projects set owner_id = ${carl.id} where id = ${project.id}`.execute(held)
  const pending = asAnn('PATCH', `/tasks/${bobs.id}`, { title: 'by the old owner' })
  for (let waited = 0; ; waited++) {
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(app.db)
    if (rows[0]?.n === 1) break
    if (waited > 500) throw new Error('the update never waited for the project\'s lock')
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  await held.commit().execute()
  const res = await pending
  t.same([res.statusCode, body(res)], [404, { error: 'task not found' }], 'checked against the project\'s new owner')
  t.same((await sql<{ title: string }>`select title from tasks where id = ${bobs.id}`.execute(app.db)).rows, [{ title: 'Bob\'s' }])
})
