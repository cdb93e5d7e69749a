// The second worked example (examples/tracker.ts), run as a host would: uuid keys, an enum, a nullable
// date that lists sort by, and tasks owned by their assignee or their project's owner, in both styles.
import t from 'tap'
import { apiClient, body, build, errorCodes, graphql, signedIn } from '../helpers/app.js'
import '../helpers/source-package.js'

const { projects, tasks, migrations } = await import('../../examples/tracker.js')

type Task = { id: string, project_id: string, assignee_id: number, title: string, status: string, due_on: string | null }
type Page = { data: Task[], pagination: { nextCursor: string | null } }
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

async function setUp (t: Parameters<typeof build>[0]) {
  const app = await build(t, { resources: [projects, tasks], migrations })
  const [ann, bob, cat] = [await signedIn(app, { name: 'Ann' }), await signedIn(app, { name: 'Bob' }), await signedIn(app, { name: 'Cat' })]
  const [asAnn, asBob, asCat] = [ann, bob, cat].map((user) => apiClient(app, user.headers)) as [ReturnType<typeof apiClient>, ReturnType<typeof apiClient>, ReturnType<typeof apiClient>]
  // Bob owns the project; Ann files its tasks.
  const project = body<{ id: string }>(await asBob('POST', '/projects', { name: 'Launch' }))
  const filed: Task[] = []
  for (const [title, due] of [['write', '2027-03-02'], ['test', null], ['ship', '2027-03-01'], ['tell', null], ['plan', '2027-02-27']] as const) {
    filed.push(body<Task>(await asAnn('POST', '/tasks', { project_id: project.id, title, due_on: due })))
  }
  return { app, ann, bob, cat, asAnn, asBob, asCat, project, filed }
}

t.test('uuid keys in paths, bodies, relations and GraphQL IDs', async (t) => {
  const { app, ann, asAnn, project, filed } = await setUp(t)
  t.match(project.id, UUID, 'the database made the key')
  const [first] = filed as [Task]
  t.match(first, { id: UUID, project_id: project.id, assignee_id: ann.id, status: 'todo' }, 'the status defaults; the filer is the assignee')
  t.same(body(await asAnn('GET', `/tasks/${first.id}?include=project`)), { ...first, project: { ...body(await asAnn('GET', `/projects/${project.id}`)) } })
  t.equal((await asAnn('GET', '/tasks/not-a-uuid')).statusCode, 400, 'a malformed key is a 400, never a database error')
  t.equal((await asAnn('GET', '/tasks/00000000-0000-4000-8000-000000000000')).statusCode, 404)
  const listed = body<Page>(await asAnn('GET', `/projects/${project.id}/tasks?limit=2`))
  const byKey = filed.map((task) => task.id).sort()
  t.same(listed.data.map((task) => task.id), byKey.slice(0, 2), 'a project\'s tasks under its path, in the order of their uuids')
  const res = await graphql(app, `{ task(id: "${first.id}") { id title status project { id name owner { name } } } }`, { headers: ann.headers })
  t.same(res.data, { task: { id: first.id, title: 'write', status: 'todo', project: { id: project.id, name: 'Launch', owner: { name: 'Bob' } } } })
})

t.test('an enum in both styles', async (t) => {
  const { app, ann, asAnn, filed } = await setUp(t)
  const [first] = filed as [Task]
  t.equal(body<Task>(await asAnn('PATCH', `/tasks/${first.id}`, { status: 'doing' })).status, 'doing')
  t.equal((await asAnn('PATCH', `/tasks/${first.id}`, { status: 'lost' })).statusCode, 400)
  t.same(body<Page>(await asAnn('GET', '/tasks?status=doing')).data.map((task) => task.title), ['write'])
  const res = await graphql(app, '{ tasks(status: doing) { title status } }', { headers: ann.headers })
  t.same(res.data, { tasks: [{ title: 'write', status: 'doing' }] }, 'TaskStatus, an enum of GraphQL')
  t.same(errorCodes(await graphql(app, '{ tasks(status: lost) { title } }', { headers: ann.headers })), ['GRAPHQL_VALIDATION_FAILED'])
})

t.test('a nullable date sorts the same in both styles, through cursors', async (t) => {
  const { app, ann, asAnn } = await setUp(t)
  const rest: Task[] = []
  let cursor: string | null = null
  do {
    const page: Page = body<Page>(await asAnn('GET', `/tasks?sort=due_on&limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`))
    rest.push(...page.data)
    cursor = page.pagination.nextCursor
  } while (cursor !== null)
  t.same(rest.map((task) => task.due_on), ['2027-02-27', '2027-03-01', '2027-03-02', null, null], 'by day, then the days missing, each page continuing the last')
  const nulls = rest.slice(3).map((task) => task.id)
  t.same(nulls, [...nulls].sort(), 'a tie broken by the key')
  const descending = body<Page>(await asAnn('GET', '/tasks?sort=-due_on')).data
  t.same(descending.map((task) => task.due_on), [null, null, '2027-03-02', '2027-03-01', '2027-02-27'], 'descending: the missing days first')
  const res = await graphql(app, '{ tasks(dueOn: "2027-02-27") { title dueOn } }', { headers: ann.headers })
  t.same(res.data, { tasks: [{ title: 'plan', dueOn: '2027-02-27' }] }, 'GraphQL: the same calendar day, as a Date')
  const sorted = await graphql(app, '{ tasks(orderBy: [DUE_ON_ASC]) { id dueOn } }', { headers: ann.headers })
  t.same(sorted.data?.tasks.map((task: { id: string }) => task.id), rest.map((task) => task.id), 'GraphQL\'s orderBy: the same order, ties and all')
})

t.test('the project\'s owner or the assignee changes a task; nobody else', async (t) => {
  const { app, bob, cat, asAnn, asBob, asCat, filed } = await setUp(t)
  const [first, second] = filed as [Task, Task]
  t.equal((await asAnn('PATCH', `/tasks/${first.id}`, { title: 'write it' })).statusCode, 200, 'the assignee')
  t.equal((await asBob('PATCH', `/tasks/${first.id}`, { title: 'write it well' })).statusCode, 200, 'the project\'s owner, through the project')
  t.equal((await asCat('PATCH', `/tasks/${first.id}`, { title: 'mine' })).statusCode, 403, 'another user may read it, not change it')
  t.equal((await asCat('DELETE', `/tasks/${second.id}`)).statusCode, 403)
  const refused = await graphql(app, `mutation { updateTask(id: "${first.id}", input: { title: "mine" }) { title } }`, { headers: cat.headers })
  t.same(errorCodes(refused), ['FORBIDDEN'], 'the same rule in GraphQL')
  const allowed = await graphql(app, `mutation { deleteTask(id: "${second.id}") }`, { headers: bob.headers })
  t.same(allowed.data, { deleteTask: true }, 'the project\'s owner deletes Ann\'s task')
  t.equal(body<Task>(await asAnn('GET', `/tasks/${first.id}`)).title, 'write it well')
})
