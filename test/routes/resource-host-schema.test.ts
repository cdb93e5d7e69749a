// What a real host schema needs (issue 40), on a project tracker of the suite's own: projects
// owned by a user, tasks listed under their project, optionally assigned to a user. Run on PGlite
// and, with DATABASE_URL, on a real PostgreSQL server.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, resourceSdl, Type } from '../../index.js'
import { apiClient, body, build, errorCodes, graphql, signedIn } from '../helpers/app.js'
import { connect, listening, subscribe } from '../helpers/subscriptions.js'

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
    assignee_id: Type.Union([Type.Integer(), Type.Null()]),
    status: Type.Union([Type.Literal('todo'), Type.Literal('doing'), Type.Literal('done')], { default: 'todo' }),
    priority: Type.Union([Type.Enum({ Low: 'low', High: 'high' }), Type.Null()]),
    kind: Type.Union([Type.String({ enum: ['bug', 'feature'] }), Type.Null()]),
    phase: Type.Union([Type.String({ enum: ['to-do', 'done'] }), Type.Null()])
  }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['project_id', 'title', 'code', 'rank', 'assignee_id', 'status', 'priority', 'kind', 'phase'],
  sort: ['title'],
  filters: ['project_id', 'assignee_id', 'title', 'status', 'priority'],
  relations: {
    project: { belongsTo: 'project', key: 'project_id', under: 'also' },
    assignee: { belongsTo: 'user', key: 'assignee_id' }
  },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' },
  bulk: { update: 'owner' },
  events: ['created']
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
        status text not null default 'todo',
        priority text,
        kind text,
        phase text,
        unique (title, project_id),
        constraint tasks_code_key unique (code, rank))`.execute(db)
      await sql`create index tasks_assignee_id on tasks (assignee_id)`.execute(db)
    }
  }
}

async function setUp (t: Parameters<typeof build>[0], listen = false) {
  const { app, url } = listen ? await listening(t, { resources: [projects, tasks], migrations }) : { app: await build(t, { resources: [projects, tasks], migrations }), url: '' }
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  return { app, url, ann, bob, asAnn: apiClient(app, ann.headers), asBob: apiClient(app, bob.headers) }
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

t.test('filters for NULL: {filter}_null in REST, an explicit null or {filter}Null in GraphQL, cursors bound to them (issue 40, 4)', async (t) => {
  const { app, ann, bob, asAnn } = await setUp(t)
  const project = body<{ id: number }>(await asAnn('POST', '/projects', { name: 'Garden' }))
  const made: Array<{ id: number, title: string }> = []
  for (const [title, assignee] of [['a', null], ['b', bob.id], ['c', null], ['d', ann.id], ['e', null]] as const) {
    made.push(body(await asAnn('POST', '/tasks', { project_id: project.id, title, assignee_id: assignee })))
  }
  const titles = (res: Parameters<typeof body>[0]) => body<{ data: Array<{ title: string }> }>(res).data.map(({ title }) => title)

  t.same(titles(await asAnn('GET', '/tasks?assignee_id_null=true')), ['a', 'c', 'e'], 'the unassigned tasks')
  t.same(titles(await asAnn('GET', '/tasks?assignee_id_null=false')), ['b', 'd'], 'the assigned ones')
  t.same(titles(await asAnn('GET', `/tasks?assignee_id_null=false&assignee_id=${bob.id}`)), ['b'], 'beside the equality filter')
  t.same(titles(await asAnn('GET', `/projects/${project.id}/tasks?assignee_id_null=true&sort=-title`)), ['e', 'c', 'a'], 'in the list under the project, sorted')
  const text = await asAnn('GET', '/tasks?assignee_id=null')
  t.same([text.statusCode, body(text).field], [400, 'assignee_id'], 'the value null is no integer: the filter is its own parameter')
  const bad = await asAnn('GET', '/tasks?assignee_id_null=maybe')
  t.same([bad.statusCode, body(bad).field], [400, 'assignee_id_null'])
  t.equal((await asAnn('GET', '/tasks?title_null=true')).statusCode, 400, 'only for a field that may be null')

  const first = body<{ data: Array<{ title: string }>, pagination: { nextCursor: string } }>(await asAnn('GET', '/tasks?assignee_id_null=true&limit=2'))
  t.same(first.data.map(({ title }) => title), ['a', 'c'])
  t.same(titles(await asAnn('GET', `/tasks?assignee_id_null=true&limit=2&cursor=${first.pagination.nextCursor}`)), ['e'], 'the cursor continues the NULL filter')
  const other = await asAnn('GET', `/tasks?assignee_id_null=false&limit=2&cursor=${first.pagination.nextCursor}`)
  t.same([other.statusCode, body(other).field], [400, 'cursor'], 'a cursor made under another NULL filter is refused')
  const openapi = body<{ paths: Record<string, { get: { parameters: Array<{ name: string, schema: { type: string } }> } }> }>(await app.inject({ method: 'GET', url: '/openapi.json' }))
  const parameters = openapi.paths['/api/v1/tasks']?.get.parameters ?? []
  t.match(parameters.find(({ name }) => name === 'assignee_id_null'), { schema: { type: 'boolean' } }, 'in OpenAPI')
  t.notOk(parameters.some(({ name }) => name === 'title_null'), 'only for a field that may be null')

  const list = async (query: string, variables?: Record<string, unknown>) => graphql(app, query, { headers: ann.headers, ...variables === undefined ? {} : { variables } })
  t.same((await list('{ tasks(assigneeId: null) { title } }')).data, { tasks: [{ title: 'a' }, { title: 'c' }, { title: 'e' }] }, 'GraphQL: an explicit null is IS NULL')
  t.same((await list('{ tasks(assigneeIdNull: false) { title } }')).data, { tasks: [{ title: 'b' }, { title: 'd' }] }, 'and assigneeIdNull as REST\'s parameter')
  t.same((await list('query ($a: ID) { tasks(assigneeId: $a) { title } }', { a: null })).data, { tasks: [{ title: 'a' }, { title: 'c' }, { title: 'e' }] }, 'a variable set to null too')
  t.equal((await list('query ($a: ID) { tasks(assigneeId: $a) { title } }', {})).data?.tasks.length, 5, 'a variable left out filters nothing')
  const refused = await list('{ tasks(title: null) { title } }')
  t.same([errorCodes(refused), fieldsOf(refused)], [['BAD_USER_INPUT'], ['title']], 'null on a field that is never null is refused, not ignored')
  const page = await list('{ tasksConnection(first: 2, assigneeId: null) { edges { node { title } } pageInfo { endCursor hasNextPage } } }')
  t.same(page.data?.tasksConnection.edges.map(({ node }: { node: { title: string } }) => node.title), ['a', 'c'])
  const after = String(page.data?.tasksConnection.pageInfo.endCursor)
  t.same((await list(`{ tasksConnection(first: 2, assigneeId: null, after: "${after}") { edges { node { title } } } }`)).data?.tasksConnection.edges, [{ node: { title: 'e' } }], 'a connection\'s cursor carries it')
  t.same(errorCodes(await list(`{ tasksConnection(first: 2, after: "${after}") { edges { node { title } } } }`)), ['BAD_USER_INPUT'], 'and is refused without it')
  t.same(made.length, 5)
})

t.test('a subscription\'s explicit null hears the rows whose field is null; on a field never null it is refused (issue 40, 4)', async (t) => {
  const { url, ann, bob, asAnn } = await setUp(t, true)
  const project = body<{ id: number }>(await asAnn('POST', '/projects', { name: 'Garden' }))
  const client = connect(t, url, ann.headers)
  const unassigned = subscribe<{ taskCreated: { title: string } }>(client, 'subscription ($a: ID) { taskCreated(assigneeId: $a) { title } }', { a: null })
  const refused = subscribe(client, 'subscription { taskCreated(title: null) { title } }')
  t.match(await refused.next().then(() => 'an event', (error: Error) => error.message), /BAD_USER_INPUT/, 'null on a field never null')
  // The subscription is in place once a first event reaches it.
  for (let i = 0; unassigned.received.length === 0 && i < 50; i++) {
    await asAnn('POST', '/tasks', { project_id: project.id, title: `warm ${i}`, assignee_id: null })
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await asAnn('POST', '/tasks', { project_id: project.id, title: 'assigned', assignee_id: bob.id })
  await asAnn('POST', '/tasks', { project_id: project.id, title: 'free', assignee_id: null })
  const heard = await unassigned.next((event) => !event.taskCreated.title.startsWith('warm'))
  t.same(heard, { taskCreated: { title: 'free' } }, 'the assigned task was not heard')
})

t.test('TypeBox enums are GraphQL enums: in the type, inputs, filters and subscription arguments (issue 40, 2)', async (t) => {
  const sdl = resourceSdl([projects, tasks])
  t.match(sdl, /enum TaskStatus \{\n {2}todo\n {2}doing\n {2}done\n\}/, 'Type.Union of literals')
  t.match(sdl, /enum TaskPriority \{\n {2}low\n {2}high\n\}/, 'Type.Enum')
  t.match(sdl, /enum TaskKind \{\n {2}bug\n {2}feature\n\}/, 'Type.String({ enum })')
  t.match(sdl, /\n {2}status: TaskStatus!\n {2}priority: TaskPriority\n {2}kind: TaskKind\n {2}phase: String\n/, 'the type\'s fields; values that are no GraphQL names stay String')
  t.match(sdl, /input CreateTaskInput \{[^}]*status: TaskStatus = todo\n[^}]*\}/, 'the create input, its default a value')
  t.match(sdl, /input UpdateTaskInput \{[^}]*status: TaskStatus\n[^}]*\}/, 'the update input')
  t.match(sdl, /tasks\(limit: Int, offset: Int, [^)]*status: TaskStatus, priority: TaskPriority/, 'the filters')
  t.match(sdl, /taskCreated\([^)]*status: TaskStatus/, 'the subscription arguments')

  const { app, ann, asAnn } = await setUp(t)
  const project = body<{ id: number }>(await asAnn('POST', '/projects', { name: 'Garden' }))
  const made = await graphql(app, `mutation { createTask(input: {projectId: "${project.id}", title: "Dig", status: doing, priority: high, kind: bug}) { status priority kind phase } }`, { headers: ann.headers })
  t.same(made.data, { createTask: { status: 'doing', priority: 'high', kind: 'bug', phase: null } }, 'in and out of GraphQL')
  await asAnn('POST', '/tasks', { project_id: project.id, title: 'Rake', phase: 'to-do' })
  t.same((await graphql(app, '{ tasks(status: todo) { title status phase } }', { headers: ann.headers })).data, { tasks: [{ title: 'Rake', status: 'todo', phase: 'to-do' }] }, 'a filter, and the default')
  t.same((await graphql(app, 'query ($s: TaskStatus) { tasks(status: $s) { title } }', { headers: ann.headers, variables: { s: 'doing' } })).data, { tasks: [{ title: 'Dig' }] }, 'a variable of the enum')
  t.same(errorCodes(await graphql(app, '{ tasks(status: nope) { title } }', { headers: ann.headers })), ['GRAPHQL_VALIDATION_FAILED'], 'another value is refused')
  t.same(body<{ data: Array<{ title: string }> }>(await asAnn('GET', '/tasks?status=doing')).data.map(({ title }) => title), ['Dig'], 'REST as before')
  const refused = await asAnn('POST', '/tasks', { project_id: project.id, title: 'Hoe', status: 'nope' })
  t.same([refused.statusCode, body(refused).field], [400, 'status'])
})

t.test('a change by filter takes the NULL filters as a list does (issue 40, 4)', async (t) => {
  const { app, ann, bob, asAnn } = await setUp(t)
  const project = body<{ id: number }>(await asAnn('POST', '/projects', { name: 'Garden' }))
  for (const [title, assignee] of [['a', null], ['b', bob.id], ['c', null]] as const) await asAnn('POST', '/tasks', { project_id: project.id, title, assignee_id: assignee })
  const ranks = async () => (await sql<{ title: string, rank: number | null }>`select title, rank from tasks order by title`.execute(app.db)).rows.map(({ title, rank }) => `${title}${rank ?? ''}`)
  const changed = await asAnn('PATCH', '/tasks?assignee_id_null=false', { rank: 1 })
  t.same([changed.statusCode, body(changed).count, await ranks()], [200, 1, ['a', 'b1', 'c']], 'REST: the assigned one')
  const graph = await graphql(app, 'mutation { updateTasks(where: {assigneeId: null}, input: {rank: 2}) { count } }', { headers: ann.headers })
  t.same([graph.data, await ranks()], [{ updateTasks: { count: 2 } }, ['a2', 'b1', 'c2']], 'GraphQL: an explicit null in where is IS NULL')
  const refused = await graphql(app, 'mutation { updateTasks(where: {title: null, projectId: "1"}, input: {rank: 3}) { count } }', { headers: ann.headers })
  t.same([errorCodes(refused), fieldsOf(refused), await ranks()], [['BAD_USER_INPUT'], ['title'], ['a2', 'b1', 'c2']], 'and refused on a field never null, nothing changed')
})
