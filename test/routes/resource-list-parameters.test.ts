// Every list takes the list parameters (issue 40, points 5 and 7), on a tracker of the suite's own:
// projects, tasks with a status, a priority and a nullable due date, listed under their project,
// assigned to a user and watched by users through a join table. GraphQL lists, connections and
// nested lists take the declared sort (`orderBy`) with REST's NULL handling and cursors; REST's nested
// routes and GraphQL's nested lists take the resource's filters, sort, `fields` and `include`. Run on
// PGlite and, with DATABASE_URL, on a real PostgreSQL server.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, resourceSdl, Type } from '../../index.js'
import { apiClient, body, build, errorCodes, graphql, signedIn, testDb } from '../helpers/app.js'
import { recordSql } from '../helpers/sql-log.js'

const projects = defineResource({
  name: 'project',
  table: 'projects',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['name'],
  sort: ['name'],
  filters: ['name'],
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
    status: Type.Union([Type.Literal('todo'), Type.Literal('doing'), Type.Literal('done')], { default: 'todo' }),
    priority: Type.Integer({ default: 0 }),
    due_on: Type.Union([Type.String({ format: 'date' }), Type.Null()]),
    assignee_id: Type.Union([Type.Integer(), Type.Null()])
  }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['project_id', 'title', 'status', 'priority', 'due_on', 'assignee_id'],
  sort: ['title', 'priority', 'due_on'],
  filters: ['project_id', 'status', 'assignee_id', 'priority'],
  search: ['title'],
  relations: {
    project: { belongsTo: 'project', key: 'project_id', under: 'also', inverse: 'tasks' },
    assignee: { belongsTo: 'user', key: 'assignee_id', inverse: 'assignedTasks' },
    watchers: { manyToMany: 'user', through: 'task_watchers', key: 'task_id', otherKey: 'user_id', inverse: 'watchedTasks' }
  },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' }
})

const migrations = {
  '0001_tracker': {
    async up (db: Kysely<any>) {
      await sql`create table projects (
        id serial primary key,
        owner_id integer not null references users (id) on delete cascade,
        name text not null)`.execute(db)
      await sql`create table tasks (
        id serial primary key,
        owner_id integer not null references users (id) on delete cascade,
        project_id integer not null references projects (id) on delete cascade,
        title text not null,
        status text not null default 'todo',
        priority integer not null default 0,
        due_on date,
        assignee_id integer references users (id) on delete set null)`.execute(db)
      await sql`create index tasks_project_id on tasks (project_id, id)`.execute(db)
      await sql`create table task_watchers (
        task_id integer not null references tasks (id) on delete cascade,
        user_id integer not null references users (id) on delete cascade,
        primary key (task_id, user_id))`.execute(db)
    }
  }
}

interface Task { id: number, title: string, status: string, priority: number, due_on: string | null }
type Page = { data: Task[], pagination: { hasMore: boolean, nextCursor: string | null } }

// Eight tasks: due dates with NULLs and ties, so that the order and the tie-break both show.
const made: ReadonlyArray<readonly [string, 'todo' | 'doing' | 'done', number, string | null]> = [
  ['a', 'todo', 2, '2027-03-01'],
  ['b', 'done', 1, null],
  ['c', 'todo', 3, '2027-01-15'],
  ['d', 'doing', 2, null],
  ['e', 'todo', 1, '2027-03-01'],
  ['f', 'done', 3, '2027-02-10'],
  ['g', 'todo', 2, null],
  ['h', 'doing', 1, '2027-01-15']
]

async function setUp (t: Parameters<typeof build>[0], options: Parameters<typeof build>[1] = {}) {
  const app = await build(t, { resources: [projects, tasks], migrations, ...options })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const asAnn = apiClient(app, ann.headers)
  const garden = body<{ id: number }>(await asAnn('POST', '/projects', { name: 'Garden' }))
  const kitchen = body<{ id: number }>(await asAnn('POST', '/projects', { name: 'Kitchen' }))
  const rows: Task[] = []
  for (const [at, [title, status, priority, due]] of made.entries()) {
    // Every other task in the garden, assigned to Bob; Bob watches the first five.
    const project = at % 2 === 0 ? garden.id : kitchen.id
    rows.push(body<Task>(await asAnn('POST', '/tasks', { project_id: project, title, status, priority, due_on: due, assignee_id: at % 2 === 0 ? bob.id : null })))
  }
  await sql`insert into task_watchers (task_id, user_id) select id, ${bob.id} from tasks where title in ('a', 'b', 'c', 'd', 'e')`.execute(app.db)
  const gql = async <D = Record<string, any>>(query: string, variables?: Record<string, unknown>) => graphql<D>(app, query, { headers: ann.headers, ...variables === undefined ? {} : { variables } })
  return { app, ann, bob, asAnn, garden, kitchen, rows, gql }
}

/** The titles of `rows` in the order REST's `sort` gives them, as an oracle: NULLs last ascending, first descending, ties by id in the same direction. */
function sortedTitles (rows: readonly Task[], field: keyof Task, descending = false): string[] {
  const compare = (x: Task, y: Task): number => {
    const [a, b] = [x[field], y[field]]
    if (a === b) return x.id - y.id
    if (a === null) return 1
    if (b === null) return -1
    return a < b ? -1 : 1
  }
  const ascending = [...rows].sort(compare)
  return (descending ? ascending.reverse() : ascending).map(({ title }) => title)
}

const titles = (res: Parameters<typeof body>[0]): string[] => body<Page>(res).data.map(({ title }) => title)
const fieldOf = (res: Awaited<ReturnType<typeof graphql>>): unknown => res.errors?.[0]?.extensions?.field

t.test('the SDL: an orderBy enum of the declared sort, on lists, connections and nested lists with the target\'s filters (issue 40, 5 and 7)', async (t) => {
  const sdl = resourceSdl([projects, tasks])
  t.match(sdl, /enum TasksOrderBy \{\n {2}ID_ASC\n {2}ID_DESC\n {2}TITLE_ASC\n {2}TITLE_DESC\n {2}PRIORITY_ASC\n {2}PRIORITY_DESC\n {2}DUE_ON_ASC\n {2}DUE_ON_DESC\n\}/, 'the sortable fields, each way')
  t.match(sdl, /\n {2}tasks\(limit: Int, offset: Int, orderBy: \[TasksOrderBy!\] = \[ID_ASC\], projectId: ID/, 'the list')
  t.match(sdl, /\n {2}tasksConnection\(first: Int, after: String, orderBy: \[TasksOrderBy!\] = \[ID_ASC\], projectId: ID/, 'the connection')
  t.match(sdl, /extend type Project \{\n[^\n]*\n {2}tasks\(limit: Int, orderBy: \[TasksOrderBy!\] = \[ID_ASC\], status: TaskStatus, assigneeId: ID, priority: Int, [^)]*q: String\): \[Task!\]!/, 'an inverse list takes the target\'s sort and filters')
  t.match(sdl, /extend type User \{\n[^\n]*\n {2}watchedTasks\(limit: Int, orderBy: \[TasksOrderBy!\] = \[ID_ASC\], projectId: ID, [^)]*\): \[Task!\]!/, 'a manyToMany inverse too')
  t.notMatch(sdl, /\n {2}tasks\(limit: Int, orderBy: [^)]*projectId/, 'but the filter on the key the project gives')
  t.match(sdl, /enum ProjectsOrderBy \{\n {2}ID_ASC\n {2}ID_DESC\n {2}NAME_ASC\n {2}NAME_DESC\n\}/)
})

t.test('GraphQL lists and connections take the declared sort, with REST\'s NULL handling and order (issue 40, 7)', async (t) => {
  const { asAnn, rows, gql } = await setUp(t)
  for (const [field, value] of [['due_on', 'DUE_ON'], ['priority', 'PRIORITY'], ['title', 'TITLE'], ['id', 'ID']] as const) {
    for (const descending of [false, true]) {
      const expected = sortedTitles(rows, field, descending)
      const rest = titles(await asAnn('GET', `/tasks?sort=${descending ? '-' : ''}${field}`))
      t.same(rest, expected, `REST sort=${descending ? '-' : ''}${field}`)
      const orderBy = `${value}_${descending ? 'DESC' : 'ASC'}`
      const list = await gql<{ tasks: Task[] }>(`{ tasks(orderBy: [${orderBy}]) { title } }`)
      t.same(list.data?.tasks.map(({ title }) => title), expected, `tasks(orderBy: ${orderBy})`)
      const connection = await gql<{ tasksConnection: { edges: Array<{ node: Task }> } }>(`{ tasksConnection(orderBy: ${orderBy}) { edges { node { title } } } }`)
      t.same(connection.data?.tasksConnection.edges.map(({ node }) => node.title), expected, `tasksConnection(orderBy: ${orderBy})`)
    }
  }
  const offset = await gql<{ tasks: Task[] }>('{ tasks(orderBy: [DUE_ON_DESC], limit: 3, offset: 2) { title } }')
  t.same(offset.data?.tasks.map(({ title }) => title), sortedTitles(rows, 'due_on', true).slice(2, 5), 'with an offset')
  const tie = await gql<{ tasks: Task[] }>('{ tasks(orderBy: [DUE_ON_DESC, ID_DESC]) { title } }')
  t.same(tie.data?.tasks.map(({ title }) => title), sortedTitles(rows, 'due_on', true), 'the tie-break may be said')
  const filtered = await gql<{ tasks: Task[] }>('query ($o: [TasksOrderBy!]) { tasks(orderBy: $o, status: todo) { title } }', { o: ['PRIORITY_DESC'] })
  t.same(filtered.data?.tasks.map(({ title }) => title), sortedTitles(rows.filter(({ status }) => status === 'todo'), 'priority', true), 'beside a filter, as a variable')
  t.same((await gql<{ tasks: Task[] }>('query ($o: [TasksOrderBy!]) { tasks(orderBy: $o) { title } }', { o: null })).data?.tasks.map(({ title }) => title), sortedTitles(rows, 'id'), 'null: the default')

  const undeclared = await gql('{ tasks(orderBy: [STATUS_ASC]) { title } }')
  t.same(errorCodes(undeclared), ['GRAPHQL_VALIDATION_FAILED'], 'a sort not declared is not in the enum')
  const two = await gql('{ tasks(orderBy: [PRIORITY_ASC, TITLE_ASC]) { title } }')
  t.same([errorCodes(two), fieldOf(two)], [['BAD_USER_INPUT'], 'orderBy'], 'one field only, as REST')
  const against = await gql('{ tasksConnection(orderBy: [PRIORITY_ASC, ID_DESC]) { edges { cursor } } }')
  t.same([errorCodes(against), fieldOf(against)], [['BAD_USER_INPUT'], 'orderBy'], 'ties are broken in the sort\'s direction')
})

t.test('a connection pages through NULLs, and cursors continue across styles under the same sort and filters (issue 40, 7)', async (t) => {
  const { asAnn, rows, gql } = await setUp(t)
  type Connection = { tasksConnection: { edges: Array<{ cursor: string, node: Task }>, pageInfo: { hasNextPage: boolean, endCursor: string | null } } }
  const page = async (orderBy: string, after: string | null, filters = '') =>
    gql<Connection>(`query ($after: String) { tasksConnection(first: 3, orderBy: [${orderBy}], after: $after${filters}) { edges { cursor node { title } } pageInfo { hasNextPage endCursor } } }`, { after })
  for (const [orderBy, field, descending] of [['DUE_ON_ASC', 'due_on', false], ['DUE_ON_DESC', 'due_on', true], ['PRIORITY_DESC', 'priority', true]] as const) {
    const seen: string[] = []
    let after: string | null = null
    for (let pages = 0; pages < 5; pages++) {
      const answer: Connection | undefined = (await page(orderBy, after)).data ?? undefined
      seen.push(...answer?.tasksConnection.edges.map(({ node }) => node.title) ?? [])
      after = answer?.tasksConnection.pageInfo.endCursor ?? null
      if (answer?.tasksConnection.pageInfo.hasNextPage !== true) break
    }
    t.same(seen, sortedTitles(rows, field, descending), `${orderBy}: every row once, in order, pages of 3`)
  }
  // An edge's cursor continues after its own row.
  const first = (await page('DUE_ON_DESC', null)).data?.tasksConnection
  const fromSecond = (await page('DUE_ON_DESC', first?.edges[1]?.cursor ?? null)).data?.tasksConnection
  t.same(fromSecond?.edges.map(({ node }) => node.title), sortedTitles(rows, 'due_on', true).slice(2, 5), 'after an edge\'s cursor')

  // REST → GraphQL: a page's nextCursor continues in a connection of the same sort.
  const rest = body<Page>(await asAnn('GET', '/tasks?sort=-due_on&limit=3'))
  t.same((await page('DUE_ON_DESC', rest.pagination.nextCursor)).data?.tasksConnection.edges.map(({ node }) => node.title), sortedTitles(rows, 'due_on', true).slice(3, 6), 'a REST cursor in GraphQL')
  // GraphQL → REST: an endCursor continues a REST page of the same sort (sort=field&order=desc says the same).
  const end = String(first?.pageInfo.endCursor)
  t.same(titles(await asAnn('GET', `/tasks?sort=due_on&order=desc&limit=3&cursor=${end}`)), sortedTitles(rows, 'due_on', true).slice(3, 6), 'a GraphQL cursor in REST')
  const filteredEnd = (await page('PRIORITY_ASC', null, ', status: todo')).data?.tasksConnection.edges[1]?.cursor
  t.same(titles(await asAnn('GET', `/tasks?sort=priority&status=todo&cursor=${String(filteredEnd)}`)), sortedTitles(rows.filter(({ status }) => status === 'todo'), 'priority').slice(2), 'under the same filters')

  // A cursor made under another sort, or other filters, is refused in both styles.
  const other = await page('DUE_ON_ASC', rest.pagination.nextCursor)
  t.same([errorCodes(other), fieldOf(other)], [['BAD_USER_INPUT'], 'cursor'], 'GraphQL refuses a cursor of another sort')
  const byId = await page('ID_ASC', end)
  t.same([errorCodes(byId), fieldOf(byId)], [['BAD_USER_INPUT'], 'cursor'], 'the default sort is a sort too')
  const refused = await asAnn('GET', `/tasks?sort=priority&cursor=${end}`)
  t.same([refused.statusCode, body(refused).field], [400, 'cursor'], 'REST refuses one of another sort')
  const unfiltered = await page('PRIORITY_ASC', String(filteredEnd))
  t.same([errorCodes(unfiltered), fieldOf(unfiltered)], [['BAD_USER_INPUT'], 'cursor'], 'or of other filters')
})

t.test('the built-in resources take their declared sort in GraphQL too (issue 40, 7)', async (t) => {
  const { app, ann, bob } = await setUp(t)
  const names = await graphql<{ users: Array<{ name: string }> }>(app, '{ users(orderBy: [NAME_DESC]) { name } }', { headers: ann.headers })
  t.same(names.data?.users.map(({ name }) => name), ['Bob', 'Ann'])
  const asBob = apiClient(app, bob.headers)
  for (const title of ['Mango', 'Apple', 'Zucchini']) await asBob('POST', '/posts', { title, content: 'c' })
  const posts = await graphql<{ postsConnection: { edges: Array<{ node: { title: string } }> } }>(app, '{ postsConnection(orderBy: TITLE_ASC) { edges { node { title } } } }', { headers: ann.headers })
  t.same(posts.data?.postsConnection.edges.map(({ node }) => node.title), ['Apple', 'Mango', 'Zucchini'])
  t.same(errorCodes(await graphql(app, '{ products(orderBy: [CATEGORY_ASC]) { name } }')), ['GRAPHQL_VALIDATION_FAILED'], 'only what the declaration sorts by')
  t.equal((await graphql(app, '{ products(orderBy: [PRICE_DESC]) { name } }')).errors, undefined)
})

t.test('REST nested routes take the target\'s filters, sort, fields and include, as OpenAPI says (issue 40, 5)', async (t) => {
  const { app, ann, bob, asAnn, garden, rows } = await setUp(t)
  const inGarden = rows.filter((_, at) => at % 2 === 0)
  const watched = rows.filter(({ title }) => ['a', 'b', 'c', 'd', 'e'].includes(title))
  const todo = ({ status }: Task): boolean => status === 'todo'

  // A belongsTo declared `under: 'also'`: the tasks' own list under the project.
  t.same(titles(await asAnn('GET', `/projects/${garden.id}/tasks?status=todo&sort=-due_on`)), sortedTitles(inGarden.filter(todo), 'due_on', true), 'under: filters and sort')
  const included = body<{ data: Array<Record<string, unknown>> }>(await asAnn('GET', `/projects/${garden.id}/tasks?include=assignee,project&fields=title&limit=1`)).data[0]
  t.match(included, { title: 'a', assignee: { name: 'Bob' }, project: { name: 'Garden' } }, 'under: include and fields')
  t.same(Object.keys(included ?? {}).sort(), ['assignee', 'id', 'project', 'title'])

  // The inverse of a belongsTo not listed (a hasMany): the tasks' own list of those assigned to Bob.
  const assigned = `/users/${bob.id}/assignedTasks`
  t.same(titles(await asAnn('GET', `${assigned}?sort=priority&status=todo`)), sortedTitles(inGarden.filter(todo), 'priority'), 'a hasMany inverse: filters and sort')
  const first = body<Page>(await asAnn('GET', `${assigned}?sort=-due_on&limit=2`))
  t.same(titles(await asAnn('GET', `${assigned}?sort=-due_on&limit=2&cursor=${String(first.pagination.nextCursor)}`)), sortedTitles(inGarden, 'due_on', true).slice(2, 4), 'its cursors')
  t.same(titles(await asAnn('GET', `/tasks?assignee_id=${bob.id}&sort=-due_on&limit=2&cursor=${String(first.pagination.nextCursor)}`)), sortedTitles(inGarden, 'due_on', true).slice(2, 4), 'are those of the filter on its key')
  const withProject = body<{ data: Array<Record<string, unknown>> }>(await asAnn('GET', `${assigned}?include=project&fields=title,due_on&limit=1`)).data
  t.match(withProject, [{ title: 'a', due_on: '2027-03-01', project: { name: 'Garden' } }], 'include and fields')
  t.same(Object.keys(withProject[0] ?? {}).sort(), ['due_on', 'id', 'project', 'title'])

  // The inverse of a manyToMany: the tasks Bob watches, through the join table.
  const watchedPath = `/users/${bob.id}/watchedTasks`
  t.same(titles(await asAnn('GET', `${watchedPath}?sort=due_on`)), sortedTitles(watched, 'due_on'), 'a manyToMany inverse: sort')
  t.same(titles(await asAnn('GET', `${watchedPath}?status=todo&sort=-priority`)), sortedTitles(watched.filter(todo), 'priority', true), 'filters')
  t.same(titles(await asAnn('GET', `${watchedPath}?assignee_id_null=true`)), ['b', 'd'], 'a NULL filter')
  t.same(titles(await asAnn('GET', `${watchedPath}?project_id=${garden.id}`)), ['a', 'c', 'e'], 'a filter on another key')
  t.match(body(await asAnn('GET', `${watchedPath}?include=watchers,project&limit=1`)), { data: [{ title: 'a', watchers: [{ name: 'Bob' }], project: { name: 'Garden' } }] }, 'include')
  const paged = body<Page>(await asAnn('GET', `${watchedPath}?sort=-due_on&limit=3`))
  t.same(titles(await asAnn('GET', `${watchedPath}?sort=-due_on&limit=3&cursor=${String(paged.pagination.nextCursor)}`)), sortedTitles(watched, 'due_on', true).slice(3), 'cursors through NULLs')
  // A manyToMany declared here: the users who watch a task, as the users' list (their filters and sort).
  t.match(body(await asAnn('GET', `/tasks/${rows[0]?.id}/watchers?name=Bob&sort=-name&fields=name`)), { data: [{ name: 'Bob' }] }, 'the users\' filters on a manyToMany of users')
  t.same(body<{ data: unknown[] }>(await asAnn('GET', `/tasks/${rows[0]?.id}/watchers?name=Ann`)).data, [])

  for (const [path, query, field] of [[watchedPath, 'sort=status', 'sort'], [watchedPath, 'include=nope', 'include'], [watchedPath, 'status=nope', 'status'], [watchedPath, 'fields=nope', 'fields'], [assigned, `assignee_id=${ann.id}`, 'assignee_id'], [`/projects/${garden.id}/tasks`, `project_id=${garden.id}`, 'project_id']] as const) {
    const refused = await asAnn('GET', `${path}?${query}`)
    t.same([refused.statusCode, body(refused).field], [400, field], `${path.split('/').at(-1) ?? ''}?${query} is refused`)
  }
  t.same(body(await asAnn('GET', '/users/999999/watchedTasks')), { error: 'user not found' })
  t.equal((await apiClient(app)('GET', watchedPath)).statusCode, 401)

  // OpenAPI lists what each nested route takes, and nothing else.
  type Parameters = Array<{ name: string, in: string, schema: { enum?: string[] } }>
  const openapi = body<{ paths: Record<string, { get?: { parameters: Parameters } }> }>(await app.inject({ method: 'GET', url: '/openapi.json' }))
  const query = (path: string): Parameters => (openapi.paths[`/api/v1${path}`]?.get?.parameters ?? []).filter((parameter) => parameter.in === 'query')
  const names = (path: string): string[] => query(path).map(({ name }) => name).sort()
  const watchedQuery = names('/users/{id}/watchedTasks')
  for (const name of ['status', 'assignee_id', 'assignee_id_null', 'project_id', 'priority', 'q', 'sort', 'include', 'fields', 'cursor']) t.ok(watchedQuery.includes(name), `watchedTasks takes ${name}`)
  t.match(query('/users/{id}/watchedTasks').find(({ name }) => name === 'sort'), { schema: { enum: ['id', '-id', 'title', '-title', 'priority', '-priority', 'due_on', '-due_on'] } })
  t.notOk(names('/users/{id}/assignedTasks').includes('assignee_id'), 'a filter on the key the path gives is not')
  t.notOk(names('/users/{id}/assignedTasks').includes('assignee_id_null'))
  t.notOk(names('/projects/{id}/tasks').includes('project_id'))
  t.ok(names('/tasks/{id}/watchers').includes('name'), 'the users\' filters on their list')
})

t.test('GraphQL nested lists take the target\'s filters and orderBy, in one statement per level (issue 40, 5 and 7)', async (t) => {
  const recorded = recordSql(await testDb())
  const { asAnn, bob, garden, kitchen, rows, gql } = await setUp(t, { db: recorded.db })
  const counted = async <D = Record<string, any>>(query: string, variables?: Record<string, unknown>) => {
    recorded.statements.length = 0
    const res = await gql<D>(query, variables)
    return { res, statements: recorded.statements.filter((statement) => !/revoked_tokens|persisted_queries|login_failures|role_changes/.test(statement)).length }
  }
  const inGarden = rows.filter((_, at) => at % 2 === 0)
  const inKitchen = rows.filter((_, at) => at % 2 === 1)
  const todo = ({ status }: Task): boolean => status === 'todo'
  type Projects = { projects: Array<{ name: string, tasks: Array<{ title: string, watchers: Array<{ name: string }> }> }> }

  const nested = await counted<Projects>('{ projects(orderBy: [NAME_DESC]) { name tasks(orderBy: [DUE_ON_DESC], status: todo, limit: 2) { title watchers(orderBy: NAME_DESC, name: "Bob") { name } } } }')
  t.same(nested.res.errors, undefined)
  t.same(nested.res.data?.projects.map(({ name, tasks }) => [name, tasks.map(({ title }) => title)]), [
    ['Kitchen', sortedTitles(inKitchen.filter(todo), 'due_on', true).slice(0, 2)],
    ['Garden', sortedTitles(inGarden.filter(todo), 'due_on', true).slice(0, 2)]
  ], 'Project.tasks: filtered and sorted, NULLs first descending, each project\'s own')
  t.same(titles(await asAnn('GET', `/projects/${garden.id}/tasks?status=todo&sort=-due_on&limit=2`)), nested.res.data?.projects[1]?.tasks.map(({ title }) => title), 'as REST\'s nested route answers')
  const watchedByBob = (title: string): string[] => ['a', 'b', 'c', 'd', 'e'].includes(title) ? ['Bob'] : []
  t.same(nested.res.data?.projects[1]?.tasks.map(({ watchers }) => watchers.map(({ name }) => name)), sortedTitles(inGarden.filter(todo), 'due_on', true).slice(0, 2).map(watchedByBob), 'a manyToMany of users takes the users\' filters')
  t.equal(nested.statements, 2, 'the projects, then every level below in one statement')

  const watched = await counted<{ user: { watchedTasks: Task[], assignedTasks: Task[] } }>(`query ($id: ID!, $order: [TasksOrderBy!]) { user(id: $id) {
    watchedTasks(orderBy: $order, assigneeId: null) { title }
    assignedTasks(orderBy: [PRIORITY_ASC], statusNull: null, status: todo) { title }
  } }`, { id: String(bob.id), order: ['DUE_ON_ASC'] })
  t.match(watched.res.errors, [{ extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }], 'no NULL filter where the field is never null')
  const user = await counted<{ user: { watchedTasks: Task[], assignedTasks: Task[] } }>(`query ($id: ID!, $order: [TasksOrderBy!]) { user(id: $id) {
    watchedTasks(orderBy: $order, assigneeId: null) { title }
    assignedTasks(orderBy: [PRIORITY_ASC], status: todo) { title }
  } }`, { id: String(bob.id), order: ['DUE_ON_ASC'] })
  t.same(user.res.data?.user, {
    watchedTasks: sortedTitles(rows.filter(({ title }, at) => ['a', 'b', 'c', 'd', 'e'].includes(title) && at % 2 === 1), 'due_on').map((title) => ({ title })),
    assignedTasks: sortedTitles(inGarden.filter(todo), 'priority').map((title) => ({ title }))
  }, 'User.watchedTasks (a manyToMany inverse) and User.assignedTasks (a hasMany inverse), an explicit null as IS NULL')
  t.equal(user.statements, 2, 'the user, then both lists in one statement')

  // Aliases of one list with other arguments: each its own rows, one statement per relation and level.
  const aliased = await counted<{ project: Record<string, Task[]> }>(`{ project(id: "${kitchen.id}") {
    done: tasks(status: done, orderBy: TITLE_DESC) { title watchers { name } }
    first: tasks(orderBy: [PRIORITY_DESC, ID_DESC], limit: 1) { title }
    all: tasks { title }
  } }`)
  t.same(aliased.res.data?.project, {
    done: sortedTitles(inKitchen.filter(({ status }) => status === 'done'), 'title', true).map((title) => ({ title, watchers: title === 'b' ? [{ name: 'Bob' }] : [] })),
    first: sortedTitles(inKitchen, 'priority', true).slice(0, 1).map((title) => ({ title })),
    all: sortedTitles(inKitchen, 'id').map((title) => ({ title }))
  }, 'aliases with their own filters and order')
  t.ok(aliased.statements <= 5, `a bounded number of statements (${aliased.statements})`)

  const refusals: Array<[string, string, string | undefined]> = [
    [`{ project(id: "${garden.id}") { tasks(orderBy: [TITLE_ASC, PRIORITY_ASC]) { title } } }`, 'BAD_USER_INPUT', 'orderBy'],
    [`{ project(id: "${garden.id}") { tasks(priority: null) { title } } }`, 'BAD_USER_INPUT', 'priority'],
    [`{ project(id: "${garden.id}") { tasks(status: nope) { title } } }`, 'GRAPHQL_VALIDATION_FAILED', undefined],
    [`{ project(id: "${garden.id}") { tasks(projectId: "${garden.id}") { title } } }`, 'GRAPHQL_VALIDATION_FAILED', undefined],
    [`{ project(id: "${garden.id}") { tasks(orderBy: [STATUS_ASC]) { title } } }`, 'GRAPHQL_VALIDATION_FAILED', undefined],
    [`{ project(id: "${garden.id}") { tasks(q: "ab") { title } } }`, 'BAD_USER_INPUT', 'q']
  ]
  for (const [query, code, field] of refusals) {
    const refused = await gql(query)
    t.same([errorCodes(refused), fieldOf(refused)], [[code], field], `refused: ${query.slice(query.indexOf('tasks('), query.indexOf(')', query.indexOf('tasks(')) + 1)}`)
  }
})
