// What a real host schema needs (issue 40), on a project tracker of the suite's own: projects
// owned by a user, tasks listed under their project, optionally assigned to a user. Run on PGlite
// and, with DATABASE_URL, on a real PostgreSQL server.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, Type } from '../../index.js'
import { apiClient, body, build, errorCodes, graphql, signedIn } from '../helpers/app.js'

const projects = defineResource({
  name: 'project',
  table: 'projects',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['name'],
  relations: { owner: { belongsTo: 'user', key: 'owner_id' } },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' }
})

const tasks = defineResource({
  name: 'task',
  table: 'tasks',
  representation: Type.Object({
    id: Type.Integer(),
    owner_id: Type.Integer(),
    project_id: Type.Integer(),
    title: Type.String({ minLength: 1 }),
    code: Type.Union([Type.String(), Type.Null()]),
    rank: Type.Union([Type.Integer(), Type.Null()]),
    assignee_id: Type.Union([Type.Integer(), Type.Null()])
  }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['project_id', 'title', 'code', 'rank', 'assignee_id'],
  sort: ['title'],
  filters: ['project_id', 'assignee_id', 'title'],
  relations: {
    project: { belongsTo: 'project', key: 'project_id', listed: true },
    assignee: { belongsTo: 'user', key: 'assignee_id' }
  },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' }
})

const migrations = {
  '0001_tracker': {
    async up (db: Kysely<any>) {
      await sql`create table projects (
        id serial primary key,
        owner_id integer not null references users (id) on delete cascade,
        name text not null,
        unique (owner_id, name))`.execute(db)
      // The parent's key last and first; a constraint named after the field it is about.
      await sql`create table tasks (
        id serial primary key,
        owner_id integer not null references users (id) on delete cascade,
        project_id integer not null references projects (id) on delete cascade,
        title text not null,
        code text,
        rank integer,
        assignee_id integer references users (id) on delete set null,
        unique (title, project_id),
        constraint tasks_code_key unique (code, rank))`.execute(db)
      await sql`create index tasks_assignee_id on tasks (assignee_id)`.execute(db)
    }
  }
}

async function setUp (t: Parameters<typeof build>[0]) {
  const app = await build(t, { resources: [projects, tasks], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  return { app, ann, bob, asAnn: apiClient(app, ann.headers), asBob: apiClient(app, bob.headers) }
}

type Errors = Awaited<ReturnType<typeof graphql>>
const fieldsOf = (response: Errors): unknown[] => (response.errors ?? []).map((error) => error.extensions?.field)

t.test('a unique constraint over several columns names the field the client set, in both styles (issue 40, 3)', async (t) => {
  const { app, ann, bob, asAnn, asBob } = await setUp(t)
  const project = body<{ id: number }>(await asAnn('POST', '/projects', { name: 'Garden' }))
  t.equal((await asBob('POST', '/projects', { name: 'Garden' })).statusCode, 201, 'another owner may have the name')

  const twice = await asAnn('POST', '/projects', { name: 'Garden' })
  t.same([twice.statusCode, body(twice)], [409, { error: 'name already exists', field: 'name' }], 'unique (owner_id, name): the owner is set by the API, the name by the client')
  const other = body<{ id: number }>(await asAnn('POST', '/projects', { name: 'Kitchen' }))
  const renamed = await asAnn('PATCH', `/projects/${other.id}`, { name: 'Garden' })
  t.same([renamed.statusCode, body(renamed)], [409, { error: 'name already exists', field: 'name' }], 'an update too')
  const created = await graphql(app, 'mutation { createProject(input: {name: "Garden"}) { id } }', { headers: ann.headers })
  t.same([errorCodes(created), fieldsOf(created)], [['CONFLICT'], ['name']], 'GraphQL: extensions.field')
  const updated = await graphql(app, `mutation { updateProject(id: "${other.id}", input: {name: "Garden"}) { id } }`, { headers: ann.headers })
  t.same([errorCodes(updated), fieldsOf(updated)], [['CONFLICT'], ['name']])

  t.equal((await asAnn('POST', '/tasks', { project_id: project.id, title: 'Dig' })).statusCode, 201)
  const task = await asAnn('POST', '/tasks', { project_id: project.id, title: 'Dig' })
  t.same([task.statusCode, body(task)], [409, { error: 'title already exists', field: 'title' }], 'unique (title, project_id): the key of the parent it is listed under is not the one')
  const graphTask = await graphql(app, `mutation { createTask(input: {projectId: "${project.id}", title: "Dig"}) { id } }`, { headers: ann.headers })
  t.same([errorCodes(graphTask), fieldsOf(graphTask)], [['CONFLICT'], ['title']])

  t.equal((await asAnn('POST', '/tasks', { project_id: project.id, title: 'Rake', code: 'R', rank: 1 })).statusCode, 201)
  const coded = await asAnn('POST', '/tasks', { project_id: project.id, title: 'Hoe', code: 'R', rank: 1 })
  t.same([coded.statusCode, body(coded)], [409, { error: 'code already exists', field: 'code' }], 'a constraint named <table>_<column>_key names that column')
  t.notMatch(coded.body, /\(R, 1\)|=\(/, 'the values the key held are never echoed')
  t.ok(bob.id > 0)
})
