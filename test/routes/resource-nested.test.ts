// Options of defineResource that the built-in comments needed, for every host: rows that live under
// the row they belong to (`under`: listed and created at /{parent}/{id}/{plural}), relations that
// REST does not include (`include: false`), and events with a subscription of their own name and
// required arguments.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, resourceSdl, Type } from '../../index.js'
import { apiClient, body, build, errorCodes, graphql, signedIn } from '../helpers/app.js'

const boards = defineResource({
  name: 'board',
  table: 'boards',
  representation: Type.Object({ id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  writable: ['name'],
  // The pins serve /boards/{id}/pins themselves, living under their board: no route of its own, unsaid.
  relations: { pins: { hasMany: 'pin', key: 'board_id' } },
  auth: { create: 'authenticated' }
})

const pins = defineResource({
  name: 'pin',
  table: 'pins',
  representation: Type.Object({ id: Type.Integer(), board_id: Type.Integer(), maker_id: Type.Integer(), text: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'maker_id',
  writable: ['text'],
  filters: ['maker_id'],
  search: ['text'],
  relations: {
    // Required, as what the rows live under always is.
    board: { belongsTo: 'board', key: 'board_id', under: 'only', include: false },
    maker: { belongsTo: 'user', key: 'maker_id', required: true }
  },
  auth: { update: false },
  events: { created: { subscription: 'pinAdded', require: ['board_id'] }, deleted: {} }
})

const migrations = {
  '0001_pins': {
    async up (db: Kysely<any>) {
      await sql`create table boards (id serial primary key, name text not null)`.execute(db)
      await sql`create table pins (
        id serial primary key,
        board_id integer not null references boards (id) on delete cascade,
        maker_id integer not null references users (id) on delete cascade,
        text text not null)`.execute(db)
      // The last test's.
      await sql`create table shelves (id serial primary key, name text not null)`.execute(db)
      await sql`create table books (id serial primary key, shelf_id integer not null references shelves (id) on delete cascade, title text not null)`.execute(db)
    }
  }
}

async function setUp (t: Parameters<typeof build>[0]) {
  const app = await build(t, { resources: [boards, pins], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const asAnn = apiClient(app, ann.headers)
  const [first, second] = [body<{ id: number }>(await asAnn('POST', '/boards', { name: 'first' })), body<{ id: number }>(await asAnn('POST', '/boards', { name: 'second' }))]
  return { app, ann, bob, asAnn, asBob: apiClient(app, bob.headers), first, second }
}

t.test('under: created and listed at /{parent}/{id}/{plural}, 404 naming the parent', async (t) => {
  const { app, ann, bob, asAnn, asBob, first, second } = await setUp(t)
  const made = await asAnn('POST', `/boards/${first.id}/pins`, { text: 'one' })
  t.equal(made.statusCode, 201)
  const pin = body<{ id: number }>(made)
  t.same(pin, { id: pin.id, board_id: first.id, maker_id: ann.id, text: 'one' }, 'the parent from the path, the owner the caller')
  t.equal(made.headers.location, `/api/v1/pins/${pin.id}`, 'the new row\'s own path')
  t.match(body(await asAnn('GET', `/pins/${pin.id}`)), { text: 'one' })
  await asBob('POST', `/boards/${first.id}/pins`, { text: 'two' })
  await asBob('POST', `/boards/${first.id}/pins`, { text: 'three' })
  await asBob('POST', `/boards/${second.id}/pins`, { text: 'elsewhere' })

  t.same([(await asAnn('POST', '/boards/999/pins', { text: 'x' })).statusCode, body(await asAnn('POST', '/boards/999/pins', { text: 'x' }))], [404, { error: 'board not found' }])
  t.equal(body(await asAnn('POST', `/boards/${first.id}/pins`, { text: 'x', board_id: second.id })).field, 'board_id', 'the path names the parent, not the body')
  t.equal((await asAnn('POST', '/pins', { text: 'x' })).statusCode, 404, 'no create outside the parent')
  t.same((await sql<{ n: number }>`select count(*)::int as n from pins`.execute(app.db)).rows, [{ n: 4 }])

  const texts = (response: Awaited<ReturnType<typeof asAnn>>) => body<{ data: Array<{ text: string }> }>(response).data.map((row) => row.text)
  t.same(texts(await asAnn('GET', `/boards/${first.id}/pins`)), ['one', 'two', 'three'])
  t.same(texts(await asAnn('GET', `/boards/${first.id}/pins?maker_id=${bob.id}&sort=-id`)), ['three', 'two'], 'with the list\'s filters and sort')
  t.same(texts(await asAnn('GET', `/boards/${first.id}/pins?q=thr`)), ['three'], 'and its search')
  const page = body<{ pagination: { nextCursor: string } }>(await asAnn('GET', `/boards/${first.id}/pins?limit=1`))
  t.same(texts(await asAnn('GET', `/boards/${first.id}/pins?limit=1&cursor=${encodeURIComponent(page.pagination.nextCursor)}`)), ['two'])
  t.equal(body(await asAnn('GET', `/boards/${second.id}/pins?limit=1&cursor=${encodeURIComponent(page.pagination.nextCursor)}`)).field, 'cursor', 'a cursor is bound to its parent')
  t.equal(body(await asAnn('GET', `/boards/${first.id}/pins?board_id=${second.id}`)).field, 'board_id', 'no filter on the key the path gives')
  t.same(body(await asAnn('GET', '/boards/999/pins')), { error: 'board not found' })
  const empty = body<{ id: number }>(await asAnn('POST', '/boards', { name: 'empty' }))
  t.same(texts(await asAnn('GET', `/boards/${empty.id}/pins`)), [])
  t.equal((await apiClient(app)('GET', `/boards/${first.id}/pins`)).statusCode, 401, 'the list\'s read rule')
  t.same(texts(await asAnn('GET', '/pins')), ['one', 'two', 'three', 'elsewhere'], 'the list of every row stays')
  t.match(body(await asAnn('GET', `/boards/${first.id}?include=pins`)), { pins: [{ text: 'one' }, { text: 'two' }, { text: 'three' }] }, 'the parent still includes them')

  const document = body<{ paths: Record<string, Record<string, unknown>> }>(await app.inject({ url: '/openapi.json' }))
  t.same(Object.keys(document.paths['/api/v1/boards/{id}/pins'] ?? {}).sort(), ['get', 'post'])
  t.same(Object.keys(document.paths['/api/v1/pins'] ?? {}), ['get'])
  t.same(Object.keys(document.paths['/api/v1/pins/{id}'] ?? {}).sort(), ['delete', 'get'])
})

t.test('include: false leaves a relation out of REST\'s include=, not out of GraphQL', async (t) => {
  const { app, ann, asAnn, first } = await setUp(t)
  await asAnn('POST', `/boards/${first.id}/pins`, { text: 'one' })
  t.match(body(await asAnn('GET', `/boards/${first.id}/pins?include=board`)), { error: 'include names no relation that can be included; includable: maker', field: 'include' })
  t.equal((await asAnn('GET', '/pins/1?include=board')).statusCode, 400)
  t.match(body(await asAnn('GET', `/boards/${first.id}/pins?include=maker`)), { data: [{ text: 'one', maker: { name: 'Ann' } }] })
  const res = await graphql(app, '{ pins { text board { name } maker { name } } }', { headers: ann.headers })
  t.same(res.data, { pins: [{ text: 'one', board: { name: 'first' }, maker: { name: 'Ann' } }] })
})

t.test('GraphQL: the create takes the parent\'s key; events with their own subscription and required arguments', async (t) => {
  const { app, ann, asAnn, first } = await setUp(t)
  const sdl = resourceSdl([boards, pins])
  t.match(sdl, /\n {2}board: Board!\n/, 'what the rows live under is required')
  t.match(sdl, /input CreatePinInput \{\n {2}boardId: ID!\n {2}text: String!\n\}/)
  t.match(sdl, /\n {2}pinAdded\(boardId: ID!, makerId: ID\): Pin!\n/, 'the required argument first, the equality filters after')
  t.match(sdl, /\n {2}pinDeleted\(makerId: ID\): Pin!\n/, 'an event with no options has the default subscription')
  t.notMatch(sdl, /pinCreated|updatePin|UpdatePinInput/)

  const heard: unknown[] = []
  app.tandemEvents.emitter.on('pinAdded', (message, done) => { heard.push(message.payload); done() })
  const made = await graphql(app, `mutation { createPin(input: {boardId: "${first.id}", text: "by GraphQL"}) { text boardId makerId board { name } } }`, { headers: ann.headers })
  t.same(made.data, { createPin: { text: 'by GraphQL', boardId: String(first.id), makerId: String(ann.id), board: { name: 'first' } } })
  const missing = await graphql(app, 'mutation { createPin(input: {boardId: "999", text: "x"}) { id } }', { headers: ann.headers })
  t.match(missing.errors, [{ message: 'board not found', extensions: { code: 'NOT_FOUND' } }])
  t.same(errorCodes(await graphql(app, 'mutation { createPin(input: {text: "x"}) { id } }', { headers: ann.headers })), ['GRAPHQL_VALIDATION_FAILED'], 'the key is required')
  await asAnn('POST', `/boards/${first.id}/pins`, { text: 'by REST' })
  await new Promise((resolve) => setImmediate(resolve))
  t.match(heard, [{ pin: { text: 'by GraphQL', board_id: first.id } }, { pin: { text: 'by REST', board_id: first.id } }], 'on the subscription\'s topic, whichever style made it')
})

t.test('mistaken uses of these options fail at start, naming the mistake', async (t) => {
  const declare = (extra: object) => () => defineResource({ ...pins.declaration, ...extra } as Parameters<typeof defineResource>[0])
  const relations = (board: object) => ({ relations: { board: { belongsTo: 'board', key: 'board_id', ...board } } })
  t.doesNotThrow(declare(relations({ under: 'only' })), 'under is required without saying so')
  t.throws(declare(relations({ under: 'only', required: false })), /relation board: under: 'only' makes it required \(the rows always have the row they live under\), so required cannot be false/)
  const nullable = Type.Object({ ...pins.representation.properties, board_id: Type.Union([Type.Integer(), Type.Null()]) })
  t.throws(declare({ representation: nullable, ...relations({ under: 'only' }) }), /relation board: under: 'only' needs a key that is never null, and board_id may be/)
  t.throws(declare(relations({ under: 'yes', required: true })), /relations\.board\.under must be one of also, only or one/)
  t.throws(declare({ ...relations({ under: 'only', required: true }), writable: ['text', 'board_id'] }), /under: 'only' sets board_id from the path, so it is neither writable nor the owner/)
  t.throws(declare({ relations: { board: { belongsTo: 'board', key: 'board_id', required: true, under: 'only' }, wall: { belongsTo: 'board', key: 'board_id', required: true, under: 'only' } } }), /only one relation may be under: 'only': board, wall/)
  t.throws(declare(relations({ include: 'no' })), /relations\.board\.include must be true or false/)
  t.throws(() => defineResource({ ...boards.declaration, relations: { pins: { hasMany: 'pin', key: 'board_id', under: 'only' } } } as Parameters<typeof defineResource>[0]), /relations\.pins\.under is not an option of a hasMany relation/)
  t.throws(declare({ events: { created: { subscription: 'Pin added' } } }), /events\.created\.subscription must be lower camel case letters and digits/)
  t.throws(declare({ events: { created: { subscription: 'pinEvent' }, deleted: { subscription: 'pinEvent' } } }), /two events are the subscription pinEvent/)
  t.throws(declare({ events: { created: { require: ['wall_id'] } } }), /event created: require names wall_id, which is not in the representation/)
  t.throws(declare({ events: { updated: {} } }), /the event updated is never announced/)
})

t.test('the way back to rows that live under a resource is their own list: an inverse named as their path takes no route of its own (issue 38)', async (t) => {
  const shelves = defineResource({
    name: 'shelf',
    plural: 'shelves',
    table: 'shelves',
    representation: Type.Object({ id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
    generated: ['id'],
    writable: ['name']
  })
  const books = defineResource({
    name: 'book',
    table: 'books',
    representation: Type.Object({ id: Type.Integer(), shelf_id: Type.Integer(), title: Type.String({ minLength: 1 }) }),
    generated: ['id'],
    writable: ['title'],
    sort: ['title'],
    relations: { shelf: { belongsTo: 'shelf', key: 'shelf_id', under: 'only', inverse: 'books' } }
  })
  const app = await build(t, { resources: [shelves, books], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const asAnn = apiClient(app, ann.headers)
  const shelf = body<{ id: number }>(await asAnn('POST', '/shelves', { name: 'fiction' }))
  t.equal((await asAnn('POST', `/shelves/${shelf.id}/books`, { title: 'Emma' })).statusCode, 201)
  await asAnn('POST', `/shelves/${shelf.id}/books`, { title: 'Dracula' })
  const titles = (response: Awaited<ReturnType<typeof asAnn>>) => body<{ data: Array<{ title: string }> }>(response).data.map((row) => row.title)
  t.same(titles(await asAnn('GET', `/shelves/${shelf.id}/books?sort=title`)), ['Dracula', 'Emma'], 'the books\' own list, with its sort')
  t.same(body(await asAnn('GET', '/shelves/999/books')), { error: 'shelf not found' })
  t.match(body(await asAnn('GET', `/shelves/${shelf.id}?include=books`)), { books: [{ title: 'Emma' }, { title: 'Dracula' }] }, 'the inverse is included')
  const res = await graphql(app, '{ shelves { name books { title } } }', { headers: ann.headers })
  t.same(res.data, { shelves: [{ name: 'fiction', books: [{ title: 'Emma' }, { title: 'Dracula' }] }] }, 'and a GraphQL field')
})

t.test('listed: the rows also listed under the row they belong to, as the resource\'s own list of them (issue 38)', async (t) => {
  const shelves = defineResource({
    name: 'shelf',
    plural: 'shelves',
    table: 'shelves',
    representation: Type.Object({ id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
    generated: ['id'],
    writable: ['name'],
    auth: { read: 'authenticated', create: 'authenticated' }
  })
  // Books are made at /books (the shelf named in the body) and listed under their shelf; no filter is
  // declared on the key, so the list under a shelf has one of its own.
  const books = defineResource({
    name: 'book',
    table: 'books',
    representation: Type.Object({ id: Type.Integer(), shelf_id: Type.Integer(), title: Type.String({ minLength: 1 }) }),
    generated: ['id'],
    writable: ['shelf_id', 'title'],
    sort: ['title'],
    search: ['title'],
    relations: { shelf: { belongsTo: 'shelf', key: 'shelf_id', required: true, under: 'also', inverse: 'books' } }
  })
  const app = await build(t, { resources: [shelves, books], migrations })
  const asAnn = apiClient(app, (await signedIn(app, { name: 'Ann' })).headers)
  const [fiction, poetry] = [body<{ id: number }>(await asAnn('POST', '/shelves', { name: 'fiction' })), body<{ id: number }>(await asAnn('POST', '/shelves', { name: 'poetry' }))]
  for (const title of ['Emma', 'Dracula', 'Beloved']) t.equal((await asAnn('POST', '/books', { shelf_id: fiction.id, title })).statusCode, 201)
  await asAnn('POST', '/books', { shelf_id: poetry.id, title: 'Odes' })
  t.equal((await asAnn('POST', `/shelves/${fiction.id}/books`, { title: 'x' })).statusCode, 404, 'listed, not created there: that is under')

  type Page = { data: Array<{ title: string }>, pagination: { nextCursor: string | null } }
  const first = body<Page>(await asAnn('GET', `/shelves/${fiction.id}/books?sort=title&limit=2`))
  t.same(first.data.map(({ title }) => title), ['Beloved', 'Dracula'], 'one shelf\'s books, in the list\'s own sort')
  const rest = body<Page>(await asAnn('GET', `/shelves/${fiction.id}/books?sort=title&limit=2&cursor=${first.pagination.nextCursor ?? ''}`))
  t.same(rest.data.map(({ title }) => title), ['Emma'], 'its cursor continues the same shelf')
  t.equal((await asAnn('GET', `/books?sort=title&limit=2&cursor=${first.pagination.nextCursor ?? ''}`)).statusCode, 400, 'and is refused by the list of every shelf')
  t.same(body<Page>(await asAnn('GET', `/shelves/${fiction.id}/books?q=emm`)).data.map(({ title }) => title), ['Emma'], 'every list parameter')
  t.same([(await asAnn('GET', '/shelves/999/books')).statusCode, body(await asAnn('GET', '/shelves/999/books'))], [404, { error: 'shelf not found' }])
  t.match(body(await asAnn('GET', `/shelves/${poetry.id}?include=books`)), { books: [{ title: 'Odes' }] }, 'the inverse is still included')

  // A host's code lists the same rows through the served resource, with the caller's rules.
  const caller = { sub: 1, role: 'user' as const, jti: 'x', exp: Math.floor(Date.now() / 1000) + 60, iat: 0, ver: 0 }
  const listed = await app.tandemResources(books).list(caller, { sort: 'title' }, { under: { relation: 'shelf', id: poetry.id } })
  t.same(listed.data.map(({ title }) => title), ['Odes'])
  await t.rejects(app.tandemResources(books).list(undefined, {}, { under: { relation: 'shelf', id: poetry.id } }), { name: 'TandemError', statusCode: 401 }, 'the read rule first')
  await t.rejects(app.tandemResources(books).list(caller, {}, { under: { relation: 'shelf', id: 0 } }), { name: 'TandemError', statusCode: 400, field: 'id' })
})

t.test('listed on the owner column: another owner\'s rows are refused where the read rule shows a caller their own only', async (t) => {
  const app = await build(t)
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const asAnn = apiClient(app, ann.headers)
  t.equal((await asAnn('GET', `/users/${ann.id}/orders`)).statusCode, 200, 'one\'s own orders (CONTRACT §2)')
  t.same([(await asAnn('GET', `/users/${bob.id}/orders`)).statusCode, body(await asAnn('GET', `/users/${bob.id}/orders`))], [403, { error: 'only its owner or an administrator may read this order' }])
  t.equal((await asAnn('GET', `/users/${bob.id}/posts`)).statusCode, 200, 'posts, read by every signed-in user: anyone\'s')
  t.equal((await asAnn('GET', '/users/999999/posts')).statusCode, 404)
})
