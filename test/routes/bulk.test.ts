// Bulk writes (CONTRACT §14, issue 42): an array POST creates every item in one transaction under the
// rules of one create, and a change or deletion by filter where the declaration offers it, in both
// styles, through the served resource.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, Type, unprocessable } from '../../index.js'
import { adminToken, apiClient, authHeaders, body, build, errorCodes, graphql, signedIn } from '../helpers/app.js'
import { orders } from '../../rules/orders.js'

type Task = { id: number, owner_id: number, title: string, done: boolean, rank: number }

const batches: string[][] = []

// A host resource with hooks: a title is trimmed before the insert, and an owner holds at most five
// tasks (the hook counts the rows already written: in a batch, those of the items before it).
const tasks = defineResource({
  name: 'task',
  table: 'tasks',
  representation: Type.Object({
    id: Type.Integer(),
    owner_id: Type.Integer(),
    title: Type.String({ minLength: 1, maxLength: 40 }),
    done: Type.Boolean({ default: false }),
    rank: Type.Integer()
  }),
  generated: ['id', 'rank'],
  owner: 'owner_id',
  writable: ['title', 'done'],
  filters: ['done', 'owner_id', 'title'],
  auth: { read: 'authenticated', create: 'authenticated', update: 'ownerOrAdmin', delete: 'ownerOrAdmin' },
  bulk: { update: 'owner', delete: 'ownerOrAdmin' },
  events: ['created', 'updated', 'deleted'],
  hooks: {
    async beforeCreate ({ trx, values }) {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from tasks where owner_id = ${values.owner_id}`.execute(trx)
      if ((rows[0]?.n ?? 0) >= 5) throw unprocessable('at most 5 tasks each', 'title')
      return { ...values, title: String(values.title).trim(), rank: (rows[0]?.n ?? 0) + 1 }
    },
    // First in a batch's transaction, with every item: here it only keeps what it was given.
    beforeCreateMany ({ inputs }) {
      batches.push(inputs.map((input) => String(input.title)))
    },
    async beforeUpdate ({ values }) {
      if (values.title === 'forbidden') throw unprocessable('not this title', 'title')
    }
  }
})

// Creates that must stay one by one.
const invites = defineResource({
  name: 'invite',
  table: 'invites',
  representation: Type.Object({ id: Type.Integer(), email: Type.String({ maxLength: 100 }) }),
  generated: ['id'],
  writable: ['email'],
  bulk: { create: false }
})

// Creates counted against the sign-up limits, each item of a batch once.
const guests = defineResource({
  name: 'guest',
  table: 'guests',
  representation: Type.Object({ id: Type.Integer(), email: Type.String({ maxLength: 100 }) }),
  generated: ['id'],
  writable: ['email'],
  auth: { read: 'authenticated', create: 'public' },
  createLimit: { kind: 'signUp', account: (body) => String(body.email) }
})

// A batch inserted in one statement once every item's beforeCreate has run.
const marks = defineResource({
  name: 'mark',
  table: 'marks',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), label: Type.String({ minLength: 1 }), seen: Type.Integer() }),
  generated: ['id', 'seen'],
  owner: 'owner_id',
  writable: ['label'],
  bulk: { create: 'inOneStatement' },
  hooks: {
    async beforeCreate ({ trx, values }) {
      if (values.label === 'veto') throw unprocessable('not this label', 'label')
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from marks`.execute(trx)
      return { ...values, label: String(values.label).trim(), seen: rows[0]?.n ?? 0 }
    },
    afterCreate ({ row }) {
      return { ...row, label: `${String(row.label)}!` }
    }
  }
})

const migrations = {
  '0001_tasks': {
    async up (db: Kysely<any>) {
      await sql`create table tasks (
        id serial primary key,
        owner_id integer not null references users (id) on delete cascade,
        title text not null unique,
        done boolean not null default false,
        rank integer not null)`.execute(db)
      await sql`create table invites (id serial primary key, email text not null)`.execute(db)
      await sql`create table guests (id serial primary key, email text not null)`.execute(db)
      await sql`create table marks (id serial primary key, owner_id integer not null, label text not null unique, seen integer not null)`.execute(db)
    }
  }
}

async function setUp (t: Parameters<typeof build>[0], options: Parameters<typeof build>[1] = {}) {
  const app = await build(t, { resources: [tasks, invites, guests, marks], migrations, ...options })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const rows = async () => (await sql<Task>`select id, owner_id, title, done, rank from tasks order by id`.execute(app.db)).rows
  return { app, ann, bob, asAnn: apiClient(app, ann.headers), asBob: apiClient(app, bob.headers), rows }
}

t.test('POST with an array creates every item in one transaction, with the hooks, defaults and owner of one create', async (t) => {
  const { app, ann, asAnn, rows } = await setUp(t)
  const res = await asAnn('POST', '/tasks', [{ title: ' first ' }, { title: 'second', done: true }, { title: 'third' }])
  t.equal(res.statusCode, 201)
  const answer = body<{ data: Task[] }>(res)
  t.same(answer.data.map(({ title, done, owner_id: owner, rank }) => ({ title, done, owner, rank })), [
    { title: 'first', done: false, owner: ann.id, rank: 1 },
    { title: 'second', done: true, owner: ann.id, rank: 2 },
    { title: 'third', done: false, owner: ann.id, rank: 3 }
  ], 'in the order given; each hook saw the rows of the items before it')
  t.same(Object.keys(body<{ data: Task[] }>(res)), ['data'])
  t.same(batches.at(-1), [' first ', 'second', 'third'], 'beforeCreateMany was given every item, checked, in order')
  t.same((await rows()).map(({ id }) => id), answer.data.map(({ id }) => id), 'written as answered')
  t.equal(res.headers.location, undefined, 'no one row to point at')

  const one = await asAnn('POST', '/tasks', { title: 'fourth' })
  t.same([one.statusCode, body(one).title, typeof one.headers.location], [201, 'fourth', 'string'], 'one object is created as it always was')

  // The served resource, as a host's own code calls it.
  const made = await app.tandemResources(tasks).createMany(await app.accessTokens.authenticate({ headers: ann.headers } as never), [{ title: 'by the host' }])
  t.match(made, [{ title: 'by the host', owner_id: ann.id, rank: 5 }])
})

t.test('a refused item: the status one create would get, field naming the item, and nothing written', async (t) => {
  const { app, asAnn, rows } = await setUp(t)
  await asAnn('POST', '/tasks', { title: 'taken' })

  const invalid = await asAnn('POST', '/tasks', [{ title: 'a' }, { title: '' }, { title: 'c' }])
  t.same([invalid.statusCode, body(invalid).field], [400, '[1].title'], 'a body the schema refuses')
  const unknown = await asAnn('POST', '/tasks', [{ title: 'a' }, { title: 'b', colour: 'red' }])
  t.same([unknown.statusCode, body(unknown).field], [400, '[1].colour'])
  const notAnObject = await asAnn('POST', '/tasks', [{ title: 'a' }, 'b'])
  t.same([notAnObject.statusCode, body(notAnObject).field], [400, '[1]'])
  const duplicate = await asAnn('POST', '/tasks', [{ title: 'a' }, { title: 'b' }, { title: 'c' }, { title: 'taken' }])
  t.same([duplicate.statusCode, body(duplicate).field], [409, '[3].title'], 'a constraint of the table')
  const hook = await asAnn('POST', '/tasks', [{ title: 'a' }, { title: 'b' }, { title: 'c' }, { title: 'd' }, { title: 'e' }])
  t.same([hook.statusCode, body(hook)], [422, { error: 'item 4: at most 5 tasks each', field: '[4].title' }], 'a hook refuses the fifth: the four before it count')
  t.same((await rows()).map(({ title }) => title), ['taken'], 'nothing of any refused batch was written')

  const empty = await asAnn('POST', '/tasks', [])
  t.same([empty.statusCode, body(empty).error], [400, 'a batch takes 1 to 100 items'])
  const tooMany = await asAnn('POST', '/tasks', Array.from({ length: 101 }, (_, n) => ({ title: `t${n}` })))
  t.same([tooMany.statusCode, body(tooMany).error], [400, 'a batch takes 1 to 100 items'])
  const signedOut = await apiClient(app)('POST', '/tasks', [{ title: 'a' }])
  t.equal(signedOut.statusCode, 401, 'the create rule first')
  const oneByOne = await asAnn('POST', '/invites', [{ email: 'a@example.com' }])
  t.same([oneByOne.statusCode, body(oneByOne).error], [400, 'invites are created one at a time: send one object'], 'bulk: { create: false } refuses arrays')
  t.equal((await asAnn('POST', '/invites', { email: 'a@example.com' })).statusCode, 201, 'one object still')
  const signUps = await apiClient(app)('POST', '/users', [{ name: 'Cy', email: 'cy@example.com', password: 'correct horse battery' }])
  t.same([signUps.statusCode, body(signUps).error], [400, 'users are created one at a time: send one object'], 'a sign-up is one account at a time')
  t.same((await rows()).map(({ title }) => title), ['taken'])
})

t.test('BULK_MAX_ITEMS bounds a batch, in both styles', async (t) => {
  const { app, ann, asAnn, rows } = await setUp(t, { bulkMaxItems: 2 })
  const res = await asAnn('POST', '/tasks', [{ title: 'a' }, { title: 'b' }, { title: 'c' }])
  t.same([res.statusCode, body(res).error], [400, 'a batch takes 1 to 2 items'])
  t.equal((await asAnn('POST', '/tasks', [{ title: 'a' }, { title: 'b' }])).statusCode, 201)
  const made = await graphql(app, 'mutation { createTasks(inputs: [{title: "c"}, {title: "d"}, {title: "e"}]) { id } }', { headers: ann.headers })
  t.same(errorCodes(made), ['BAD_USER_INPUT'])
  t.equal((await rows()).length, 2)
  const openapi = body<{ paths: Record<string, any> }>(await app.inject('/openapi.json'))
  t.equal(openapi.paths['/api/v1/tasks'].post.requestBody.content['application/json'].schema.anyOf[1].maxItems, 2, 'OpenAPI says the bound')
})

t.test('an Idempotency-Key covers the whole batch', async (t) => {
  const { asAnn, rows } = await setUp(t)
  const batch = [{ title: 'a' }, { title: 'b' }]
  const first = await asAnn('POST', '/tasks', batch, { 'idempotency-key': 'k1' })
  const again = await asAnn('POST', '/tasks', batch, { 'idempotency-key': 'k1' })
  t.same([first.statusCode, again.statusCode, again.headers['idempotent-replayed']], [201, 201, 'true'])
  t.equal(again.body, first.body, 'the first answer again')
  t.equal((await rows()).length, 2, 'written once')
  const other = await asAnn('POST', '/tasks', [{ title: 'c' }], { 'idempotency-key': 'k1' })
  t.same([other.statusCode, body(other).field], [422, 'Idempotency-Key'])

  // A refused batch under a key writes nothing and gives the key back.
  const refused = await asAnn('POST', '/tasks', [{ title: 'x' }, { title: 'a' }], { 'idempotency-key': 'k2' })
  t.same([refused.statusCode, body(refused).field], [409, '[1].title'])
  t.equal((await rows()).length, 2)
  const retried = await asAnn('POST', '/tasks', [{ title: 'x' }, { title: 'y' }], { 'idempotency-key': 'k2' })
  t.equal(retried.statusCode, 201)
  t.equal((await rows()).length, 4)
})

t.test('events are announced per row, after the commit', async (t) => {
  const { app, asAnn } = await setUp(t)
  const heard: string[] = []
  const emit = app.tandemEvents.emitter.emit.bind(app.tandemEvents.emitter)
  app.tandemEvents.emitter.emit = ((message: { topic: string, payload: Record<string, { title?: string }> }, callback?: () => void) => {
    heard.push(`${message.topic} ${String(message.payload.task?.title)}`)
    return emit(message as never, callback as never)
  }) as typeof app.tandemEvents.emitter.emit
  await asAnn('POST', '/tasks', [{ title: 'a' }, { title: 'b' }])
  await asAnn('POST', '/tasks', [{ title: 'c' }, { title: 'a' }])
  await asAnn('PATCH', '/tasks?done=false', { done: true })
  await asAnn('DELETE', '/tasks?title=b')
  t.same(heard, ['taskCreated a', 'taskCreated b', 'taskUpdated a', 'taskUpdated b', 'taskDeleted b'], 'none for the refused batch')
})

t.test('GraphQL: createTasks(inputs:) with the same answer and errors', async (t) => {
  const { app, ann, rows } = await setUp(t)
  const made = await graphql(app, 'mutation ($inputs: [CreateTaskInput!]!) { createTasks(inputs: $inputs) { title done ownerId rank } }', { headers: ann.headers, variables: { inputs: [{ title: ' a ' }, { title: 'b', done: true }] } })
  t.same(made.data, { createTasks: [{ title: 'a', done: false, ownerId: String(ann.id), rank: 1 }, { title: 'b', done: true, ownerId: String(ann.id), rank: 2 }] })
  const refused = await graphql(app, 'mutation { createTasks(inputs: [{title: "c"}, {title: "a"}]) { id } }', { headers: ann.headers })
  t.same([errorCodes(refused), refused.errors?.[0]?.extensions?.field], [['CONFLICT'], '[1].title'])
  const invalid = await graphql(app, 'mutation { createTasks(inputs: [{title: "c"}, {title: ""}]) { id } }', { headers: ann.headers })
  t.same([errorCodes(invalid), invalid.errors?.[0]?.extensions?.field], [['BAD_USER_INPUT'], '[1].title'])
  t.same(errorCodes(await graphql(app, 'mutation { createTasks(inputs: []) { id } }', { headers: ann.headers })), ['BAD_USER_INPUT'])
  t.same(errorCodes(await graphql(app, 'mutation { createTasks(inputs: [{title: "z"}]) { id } }')), ['UNAUTHENTICATED'])
  t.same((await rows()).map(({ title }) => title), ['a', 'b'])
  const sdl = await graphql(app, '{ __type(name: "Mutation") { fields { name } } }')
  const fields = (sdl.data?.__type.fields as Array<{ name: string }>).map(({ name }) => name)
  t.ok(fields.includes('createTasks') && fields.includes('updateTasks') && fields.includes('deleteTasks'))
  t.notOk(fields.includes('createInvites') || fields.includes('updateInvites'), 'not where the declaration does not offer them')
})

t.test('PATCH and DELETE by filter: at least one filter, the caller\'s rows only, count and ids', async (t) => {
  const { app, ann, bob, asAnn, asBob, rows } = await setUp(t)
  const mine = body<{ data: Task[] }>(await asAnn('POST', '/tasks', [{ title: 'a1' }, { title: 'a2' }, { title: 'a3', done: true }])).data
  await asBob('POST', '/tasks', [{ title: 'b1' }, { title: 'b2' }])

  const changed = await asAnn('PATCH', '/tasks?done=false', { done: true })
  t.same([changed.statusCode, body(changed)], [200, { count: 2, ids: [mine[0]?.id, mine[1]?.id] }], 'an owner rule narrows to the caller\'s rows')
  t.same((await rows()).map(({ title, done }) => `${title} ${String(done)}`), ['a1 true', 'a2 true', 'a3 true', 'b1 false', 'b2 false'], 'Bob\'s rows untouched')

  const noFilter = await asAnn('PATCH', '/tasks', { done: false })
  t.same([noFilter.statusCode, body(noFilter).error], [400, 'a change of tasks by filter needs at least one filter: done, owner_id, title'])
  t.equal((await asAnn('DELETE', '/tasks')).statusCode, 400)
  t.equal((await asAnn('PATCH', '/tasks?colour=red', { done: false })).statusCode, 400, 'an unknown filter')
  t.equal((await asAnn('PATCH', '/tasks?done=true', { done: false, colour: 'red' })).statusCode, 400, 'the body of a PATCH')
  const hook = await asAnn('PATCH', '/tasks?title=a1', { title: 'forbidden' })
  t.same([hook.statusCode, body(hook).field], [422, 'title'], 'the update hooks run per row')
  const none = await asAnn('PATCH', `/tasks?owner_id=${bob.id}`, { done: false })
  t.same(body(none), { count: 0, ids: [] }, 'another\'s rows are not the caller\'s to change')

  const deleted = await asBob('DELETE', '/tasks?done=false')
  t.same([deleted.statusCode, body(deleted).count], [200, 2])
  const admin = apiClient(app, await adminToken(app))
  const all = await admin('DELETE', `/tasks?owner_id=${ann.id}`)
  t.same(body(all), { count: 3, ids: mine.map(({ id }) => id) }, 'ownerOrAdmin: an administrator deletes anyone\'s')
  t.same(await rows(), [])
  const forAdmin = await admin('PATCH', '/tasks?done=true', { done: false })
  t.same(body(forAdmin), { count: 0, ids: [] }, 'owner: an administrator has no rows of their own')
  t.equal((await apiClient(app)('DELETE', '/tasks?done=true')).statusCode, 401)
  t.equal((await asAnn('PATCH', '/invites?email=a', { email: 'b' })).statusCode, 404, 'not offered: no route')
  t.equal((await asAnn('DELETE', '/invites?email=a')).statusCode, 404)
})

t.test('more matching rows than BULK_MAX_ITEMS: 422 and nothing changed', async (t) => {
  const { app, ann, asAnn, rows } = await setUp(t, { bulkMaxItems: 2 })
  await asAnn('POST', '/tasks', [{ title: 'a' }, { title: 'b' }])
  await asAnn('POST', '/tasks', [{ title: 'c' }])
  const res = await asAnn('PATCH', '/tasks?done=false', { done: true })
  t.same([res.statusCode, body(res).error], [422, 'more than 2 tasks match these filters: narrow them (at most 2 rows are changed at once)'])
  t.equal((await asAnn('DELETE', '/tasks?done=false')).statusCode, 422)
  t.same((await rows()).map(({ done }) => done), [false, false, false], 'nothing changed')
  const refused = await graphql(app, 'mutation { deleteTasks(where: {done: false}) { count } }', { headers: ann.headers })
  t.same(errorCodes(refused), ['BAD_USER_INPUT'])
  t.equal((await rows()).length, 3)
})

t.test('GraphQL: updateTasks(where:, input:) and deleteTasks(where:)', async (t) => {
  const { app, ann, asAnn, asBob, rows } = await setUp(t)
  const mine = body<{ data: Task[] }>(await asAnn('POST', '/tasks', [{ title: 'a1' }, { title: 'a2' }])).data
  await asBob('POST', '/tasks', [{ title: 'b1' }])
  const changed = await graphql(app, 'mutation { updateTasks(where: {done: false}, input: {done: true}) { count ids } }', { headers: ann.headers })
  t.same(changed.data, { updateTasks: { count: 2, ids: mine.map(({ id }) => String(id)) } })
  t.same(errorCodes(await graphql(app, 'mutation { updateTasks(where: {}, input: {done: true}) { count } }', { headers: ann.headers })), ['BAD_USER_INPUT'], 'at least one filter')
  const deleted = await graphql(app, `mutation { deleteTasks(where: {ownerId: "${ann.id}"}) { count ids } }`, { headers: ann.headers })
  t.same(deleted.data, { deleteTasks: { count: 2, ids: mine.map(({ id }) => String(id)) } })
  t.same((await rows()).map(({ title, done }) => `${title} ${String(done)}`), ['b1 false'])
  const anonymous = await graphql(app, 'mutation { deleteTasks(where: {done: false}) { count } }')
  t.same(errorCodes(anonymous), ['UNAUTHENTICATED'])
  const stranger = await graphql(app, 'mutation { deleteTasks(where: {done: false}) { count ids } }', { headers: await authHeaders(app, { id: 999 }) })
  t.same(stranger.data, { deleteTasks: { count: 0, ids: [] } })
})

t.test('the built-in products: arrays, and changes and deletions by filter for administrators only', async (t) => {
  const { app, asAnn } = await setUp(t)
  const admin = apiClient(app, await adminToken(app))
  const made = await admin('POST', '/products', [{ name: 'Tea', category: 'kitchen', price: 4.5 }, { name: 'Pot', category: 'kitchen', price: 20, stock: 3 }])
  t.same([made.statusCode, body<{ data: Array<{ stock: number }> }>(made).data.map(({ stock }) => stock)], [201, [0, 3]], 'the defaults of one create')
  const price = await admin('POST', '/products', [{ name: 'A', category: 'x', price: 1 }, { name: 'B', category: 'x', price: 1.005 }])
  t.same([price.statusCode, body(price).field], [400, '[1].price'], 'the price hook, per item')
  t.equal((await asAnn('POST', '/products', [{ name: 'C', category: 'x', price: 1 }])).statusCode, 403)

  const [, pot] = body<{ data: Array<{ id: number }> }>(made).data
  t.equal((await asAnn('POST', '/orders', [{ items: [{ product_id: pot?.id, quantity: 1 }] }])).statusCode, 201)
  const changed = await admin('PATCH', '/products?category=kitchen', { price: 5 })
  t.same(body(changed).count, 2)
  t.same([(await admin('PATCH', '/products?category=kitchen', { price: 5.001 })).statusCode], [400], 'the price hook, per row')
  t.equal((await asAnn('PATCH', '/products?category=kitchen', { price: 1 })).statusCode, 403, 'an administrator\'s')
  const refused = await admin('DELETE', '/products?category=kitchen')
  t.same([refused.statusCode, body(refused).error], [409, 'the product is part of orders and cannot be deleted'])
  t.same((await app.db.selectFrom('products').select(['name', 'price']).orderBy('id').execute()).map(({ name, price }) => `${name} ${price}`), ['Tea 5', 'Pot 5'], 'an ordered product refuses, and the batch deletes nothing')
  const cleared = await graphql(app, 'mutation { deleteProducts(where: {category: "kitchen", inStock: false}) { count } }', { headers: (await adminToken(app)) })
  t.same(cleared.data, { deleteProducts: { count: 1 } }, 'the one never ordered, in GraphQL')
})

t.test('createLimit counts every item of a batch, in both styles', async (t) => {
  const { app } = await setUp(t)
  const guest = (n: number) => ({ email: `guest${n}@example.com` })
  const post = async (payload: object, remoteAddress: string) => app.inject({ method: 'POST', url: '/api/v1/guests', payload, remoteAddress })
  // Ten sign-ups a minute per address and account: eleven for one account in one request is over.
  const sameAccount = await post(Array.from({ length: 11 }, () => guest(1)), '10.9.0.1')
  t.same([sameAccount.statusCode, typeof sameAccount.headers['retry-after']], [429, 'string'])
  // Thirty per address: a batch of 31 accounts is over, one of 30 is not.
  t.equal((await post(Array.from({ length: 31 }, (_, n) => guest(n)), '10.9.0.2')).statusCode, 429)
  t.equal((await post(Array.from({ length: 30 }, (_, n) => guest(n)), '10.9.0.3')).statusCode, 201)
  t.equal((await post(guest(99), '10.9.0.3')).statusCode, 429, 'the batch spent the address\'s thirty')
  const inputs = Array.from({ length: 11 }, () => '{email: "guest1@example.com"}').join(', ')
  const made = await graphql(app, `mutation { createGuests(inputs: [${inputs}]) { id } }`, { remoteAddress: '10.9.0.4' })
  t.same(errorCodes(made), ['RATE_LIMITED'])
  t.equal((await sql<{ n: number }>`select count(*)::int as n from guests`.execute(app.db)).rows[0]?.n, 30, 'only the batch within the limits')
})

t.test("bulk: { create: 'inOneStatement' }: the hooks of every item, the rows in one statement, a refused item still named", async (t) => {
  const { app, ann, asAnn } = await setUp(t)
  const marksOf = async () => (await sql<{ label: string }>`select label from marks order by id`.execute(app.db)).rows.map(({ label }) => label)
  const made = await asAnn('POST', '/marks', [{ label: ' a ' }, { label: 'b' }, { label: 'c' }])
  t.same([made.statusCode, body<{ data: unknown[] }>(made).data], [201, [
    { id: 1, owner_id: ann.id, label: 'a!', seen: 0 },
    { id: 2, owner_id: ann.id, label: 'b!', seen: 0 },
    { id: 3, owner_id: ann.id, label: 'c!', seen: 0 }
  ]], 'in the order given, each after its afterCreate; the hooks ran before any row of the batch was written')
  const taken = await asAnn('POST', '/marks', [{ label: 'd' }, { label: 'e' }, { label: 'b' }])
  t.same([taken.statusCode, body(taken).field], [409, '[2].label'], 'a constraint names the item it refused')
  const twice = await asAnn('POST', '/marks', [{ label: 'f' }, { label: 'g' }, { label: 'f' }])
  t.same([twice.statusCode, body(twice).field], [409, '[2].label'], 'two items of one batch alike')
  const vetoed = await asAnn('POST', '/marks', [{ label: 'h' }, { label: 'veto' }])
  t.same([vetoed.statusCode, body(vetoed).field], [422, '[1].label'])
  t.same(await marksOf(), ['a', 'b', 'c'], 'nothing of a refused batch')
  const one = await asAnn('POST', '/marks', { label: 'i' })
  t.same(body(one).seen, 3, 'one create as always')
  t.throws(() => defineResource({ ...orders.declaration, name: 'order2', bulk: { create: 'inOneStatement' } } as never), /inOneStatement is for the rows Tandem inserts/)
})
