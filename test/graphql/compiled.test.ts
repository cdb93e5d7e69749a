// Queries answered by the database alone (graphql/compiled.ts): a query of plain lists, columns and
// relations is one statement whose JSON text is the answer, byte for byte the one GraphQL's execution
// gives; anything that needs GraphQL's execution (a read rule on a field, a scalar written in
// JavaScript, a directive, a refused caller or argument) is executed as before, with the same answer.
import { sql, type Kysely } from 'kysely'
import t, { type Test } from 'tap'
import { defineResource, Type } from '../../index.js'
import { adminToken, apiClient, build, signedIn, testDb } from '../helpers/app.js'
import { executedByGraphql } from '../helpers/executed.js'
import { recordSql } from '../helpers/sql-log.js'

// Chores: an enum, a date that may be null, a helper who may be nobody, an instant.
const chores = defineResource({
  name: 'chore',
  table: 'chores',
  representation: Type.Object({
    id: Type.Integer(),
    owner_id: Type.Integer(),
    title: Type.String({ minLength: 1 }),
    status: Type.Union([Type.Literal('todo'), Type.Literal('done')]),
    due_on: Type.Union([Type.String({ format: 'date' }), Type.Null()]),
    helper_id: Type.Union([Type.Integer(), Type.Null()]),
    created_at: Type.String({ format: 'date-time' })
  }),
  generated: ['id', 'created_at'],
  owner: 'owner_id',
  writable: ['title', 'status', 'due_on', 'helper_id'],
  relations: {
    owner: { belongsTo: 'user', key: 'owner_id', inverse: 'chores' },
    helper: { belongsTo: 'user', key: 'helper_id' }
  },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' }
})

const migrations = {
  '0001_chores': {
    async up (db: Kysely<any>) {
      await sql`create table chores (
        id serial primary key,
        owner_id integer not null references users (id) on delete cascade,
        title text not null,
        status text not null,
        due_on date,
        helper_id integer references users (id) on delete set null,
        created_at timestamptz not null default now())`.execute(db)
      await sql`create index chores_owner_id_id_idx on chores (owner_id, id)`.execute(db)
      await sql`create index chores_helper_id_id_idx on chores (helper_id, id)`.execute(db)
    }
  }
}

async function setUp (t: Test, options: Parameters<typeof build>[1] = {}) {
  const recorded = recordSql(await testDb())
  const app = await build(t, { db: recorded.db, resources: [chores], migrations, ...options })
  const ann = await signedIn(app, { name: 'Ann "the first"\n' })
  const bob = await signedIn(app, { name: 'Bob' })
  const asAnn = apiClient(app, ann.headers)
  await asAnn('POST', '/chores', { title: 'dishes', status: 'todo', due_on: '2027-02-20' })
  await asAnn('POST', '/chores', { title: 'floors é ✓', status: 'done', due_on: null, helper_id: bob.id })
  await apiClient(app, bob.headers)('POST', '/chores', { title: 'bins', status: 'todo' })
  const relevant = () => recorded.statements.filter((s) => !/revoked_tokens|persisted_queries|login_failures/.test(s))
  const ask = async (query: string, headers: Record<string, string> = ann.headers, variables?: Record<string, unknown>) => {
    recorded.statements.length = 0
    const reply = await app.inject({ method: 'POST', url: '/graphql', headers, payload: { query, ...variables === undefined ? {} : { variables } } })
    return { reply, statements: relevant() }
  }
  /** The query as sent and as GraphQL executes it: the same status, type and body to the byte. */
  const both = async (query: string, headers: Record<string, string> = ann.headers, variables?: Record<string, unknown>) => {
    const sent = await ask(query, headers, variables)
    const executed = await ask(executedByGraphql(query), headers, variables)
    // Errors point into the query as sent, which the executed one prints on other lines.
    const placed = (text: string) => text.replace(/"locations":\[[^\]]*\],/g, '')
    t.equal(placed(sent.reply.body), placed(executed.reply.body), `the same answer: ${query}`)
    t.equal(sent.reply.statusCode, executed.reply.statusCode)
    t.equal(sent.reply.headers['content-type'], executed.reply.headers['content-type'])
    return { body: JSON.parse(sent.reply.body), compiled: sent.statements, executed: executed.statements }
  }
  return { app, ann, bob, ask, both, failing: recorded.failing }
}

t.test('columns, enums, dates, nulls, aliases, __typename and fragments: one statement, the answer GraphQL gives', async (t) => {
  const { both } = await setUp(t)
  const query = `{ __typename all: chores(limit: 5) { ...C helper { name } owner { __typename ... on User { name } } }
    users(limit: 2, offset: 0) { id name chores { title } } }
    fragment C on Chore { id title status dueOn ownerId done: status }`
  const { body, compiled } = await both(query)
  t.equal(compiled.length, 2, 'one statement per root list')
  t.same(body.data.all.map((c: { status: string, dueOn: string | null }) => [c.status, c.dueOn]), [['todo', '2027-02-20'], ['done', null], ['todo', null]])
  t.same(body.data.all[1].helper, { name: 'Bob' }, 'a helper, and nobody as null')
  t.equal(body.data.all[0].helper, null)
  t.equal(body.data.all[0].id, String(body.data.all[0].id), 'an ID is a string')
  t.match(Object.keys(body.data.all[0]), ['id', 'title', 'status', 'dueOn', 'ownerId', 'done', 'helper', 'owner'], 'in the order asked')
  t.equal(body.data.users[0].name, 'Ann "the first"\n', 'text escaped as JSON')
})

t.test('variables, and limits past the defaults', async (t) => {
  const { both } = await setUp(t)
  const { body, compiled } = await both('query ($n: Int = 1, $m: Int) { chores(limit: $n) { title owner { chores(limit: $m) { title } } } }', undefined, { m: 1 })
  t.equal(compiled.length, 1)
  t.same(body.data.chores, [{ title: 'dishes', owner: { chores: [{ title: 'dishes' }] } }])
})

t.test('what GraphQL must execute is executed, with the same answer', async (t) => {
  const { app, both, bob } = await setUp(t)
  // An instant (DateTime) is written by JavaScript; another user's email is hidden by its read rule.
  for (const query of ['{ chores { createdAt } }', '{ users { name email } }', '{ chores { title owner { email } } }']) {
    const { compiled, executed } = await both(query)
    t.same(compiled, executed, `executed by GraphQL: ${query}`)
    t.ok(compiled.length >= 1)
  }
  const emails = (await both('{ users { name email } }')).body.data.users
  t.same(emails.map((u: { email: string | null }) => u.email === null), [false, true], 'her own email only')
  const asBob = (await both('{ chores { title owner { email } } }', bob.headers)).body.data.chores
  t.same(asBob.map((c: { owner: { email: string | null } }) => c.owner.email === null), [true, true, false])

  // Refusals: the error GraphQL gives, where it gives it.
  for (const [query, headers] of [['{ chores { title } }', {}], ['{ chores(limit: 1000) { title } }', undefined], ['{ chores { owner { chores(limit: 0) { id } } } }', undefined]] as const) {
    const { body, compiled } = await both(query, headers)
    t.ok(body.errors?.length > 0, `refused: ${query}`)
    t.notOk(compiled.some((s) => /string_agg/.test(s)), 'no answer of the database alone')
  }
  // A deleted user's token reads nothing, as GraphQL's execution answers it.
  const gone = await signedIn(app, { name: 'Gone' })
  t.equal((await apiClient(app, gone.headers)('DELETE', `/users/${gone.id}`)).statusCode, 204)
  const stale = await both('{ chores { title owner { name } } }', gone.headers)
  t.same(stale.body.data, null, 'a deleted user\'s token: no rows')
  t.notOk(stale.compiled.some((s) => /string_agg/.test(s)), 'and no answer of the database alone')
  const admin = await adminToken(app)
  const asAdmin = await both('{ users(limit: 5) { email } }', admin)
  t.same(asAdmin.body.data.users.map((u: { email: string | null }) => u.email === null), [false, false, false], 'an administrator reads every email')
})

t.test('a GET request is answered the same way, with the JSON type', async (t) => {
  const { app, ann } = await setUp(t)
  const query = '{ chores(limit: 2) { title status } }'
  const res = await app.inject({ method: 'GET', url: `/graphql?query=${encodeURIComponent(query)}`, headers: ann.headers })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(res.body, '{"data":{"chores":[{"title":"dishes","status":"todo"},{"title":"floors é ✓","status":"done"}]}}')
})

t.test('a document sent again is answered before GraphQL reads it, by the caller\'s rules each time', async (t) => {
  // Each reads their own chores only: the answer remembered for the text must not be anyone's rows.
  const own = defineResource({ ...chores.declaration, auth: { ...chores.declaration.auth, read: 'owner' } } as Parameters<typeof defineResource>[0])
  const { app, ann, bob, ask, both } = await setUp(t, { resources: [own] })
  const query = '{ chores { title helper { name } } }'
  const first = await both(query)
  t.same(first.body.data.chores.map((c: { title: string }) => c.title), ['dishes', 'floors é ✓'])
  for (const variables of [undefined, {}]) {
    const again = await ask(query, ann.headers, variables)
    t.equal(again.reply.body, JSON.stringify(first.body), 'the same text again')
    t.equal(again.reply.headers['content-type'], 'application/json; charset=utf-8')
    t.equal(again.statements.length, 1, 'from one statement')
  }
  t.same((await both(query, bob.headers)).body.data.chores.map((c: { title: string }) => c.title), ['bins'], 'another caller: their rows')
  const anonymous = await both(query, {})
  t.ok(anonymous.body.errors?.length > 0, 'no token: GraphQL\'s refusal')
  const gone = await signedIn(app, { name: 'Gone' })
  t.same((await both(query, gone.headers)).body.data, { chores: [] }, 'a new user: none')
  t.equal((await apiClient(app, gone.headers)('DELETE', `/users/${gone.id}`)).statusCode, 204)
  t.same((await both(query, gone.headers)).body.data, null, 'then deleted: no rows')

  // What the text alone does not say is read by GraphQL: an operation name, variables, a persisted query.
  const named = await app.inject({ method: 'POST', url: '/graphql', headers: ann.headers, payload: { query, operationName: 'Other' } })
  t.match(JSON.parse(named.body), { data: undefined, errors: [{ message: 'Unknown operation named "Other".' }] }, 'an operation name the document lacks: GraphQL\'s error, no rows')
  const extra = await app.inject({ method: 'POST', url: '/graphql', headers: ann.headers, payload: { query, variables: { n: 1 } } })
  t.equal(extra.body, JSON.stringify(first.body), 'variables the document does not declare: the same answer, through GraphQL')
  const wrong = await app.inject({ method: 'POST', url: '/graphql', headers: ann.headers, payload: { query, variables: 5 } })
  t.equal(wrong.statusCode, 400, 'variables that are not an object: refused')
})

t.test('a document sent again still counts against the rate limit', async (t) => {
  const max = 20
  const { ask } = await setUp(t, { rateLimitMax: max })
  const statuses: number[] = []
  // Setting up (sign-ups, chores) spent some of the window: within `max` more, the limit answers.
  for (let i = 0; i < max && !statuses.includes(429); i++) statuses.push((await ask('{ chores { title } }')).reply.statusCode)
  t.ok(statuses.filter((status) => status === 200).length >= 2, 'answered, then answered again')
  t.equal(statuses.at(-1), 429, `then refused: ${statuses.join(' ')}`)
})

t.test('regression: a database fault in an answer made before Mercurius reads the request is not met twice more', async (t) => {
  const { ask, failing } = await setUp(t)
  const query = '{ chores { title owner { name } } }'
  const answered = await ask(query)
  t.equal(answered.reply.statusCode, 200)
  await ask(query)
  // The database-alone statement now fails: GraphQL executes the query with its own statements, once.
  failing.when = /string_agg/
  const faulted = await ask(query)
  t.equal(faulted.reply.body, answered.reply.body, 'the answer, from GraphQL\'s execution')
  t.equal(faulted.statements.filter((s) => /string_agg/.test(s)).length, 1, 'the failing statement tried once, not again before execution')
})
