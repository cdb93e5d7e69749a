// The served resource holds every rule (issue 38, point 1): code that calls it the way a transport
// does, passing the caller and no rule of its own, still cannot read or change another owner's rows,
// and a host's own route lists and creates through it with its caller's rules (CONTRACT §15).
import Fastify from 'fastify'
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, Type } from '../../index.js'
import type { AccessUser } from '../../plugins/auth.js'
import { serverOptions } from '../../plugins/server-options.js'
import tandem from '../../app/tandem.js'
import { TandemError } from '../../schema/errors.js'
import { adminToken, body, resetDb, signedIn, TEST_SECRET, testDb } from '../helpers/app.js'
import type { Test } from '../helpers/database.js'

const notes = defineResource({
  name: 'note',
  table: 'notes',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), title: Type.String({ minLength: 1 }), secret: Type.Union([Type.String(), Type.Null()]) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['title', 'secret'],
  filters: ['title'],
  fields: { secret: { read: 'owner' } },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' },
  events: ['created', 'updated'],
  actions: { pin: { auth: 'owner', run: async ({ row }) => row } }
})

// Read by its owner only; another's is refused (403) rather than hidden.
const safes = defineResource({
  name: 'safe',
  table: 'safes',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['name'],
  // The owner's resource, which a list of one owner's rows answers 404 for when there is none.
  relations: { owner: { belongsTo: 'user', key: 'owner_id' } },
  auth: { read: 'ownerOrAdmin', create: 'authenticated', update: 'owner', delete: 'owner' },
  othersRows: 'forbidden'
})

const migrations = {
  '0001_notes': {
    async up (db: Kysely<any>) {
      await sql`create table notes (id serial primary key, owner_id integer not null references users (id) on delete cascade, title text not null, secret text)`.execute(db)
      await sql`create table safes (id serial primary key, owner_id integer not null references users (id) on delete cascade, name text not null)`.execute(db)
    }
  }
}

/** An application with a host's own routes beside Tandem's, as the README shows them. */
async function setUp (t: Test) {
  const db = await testDb()
  await resetDb(db)
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  await app.register(tandem, { db, jwtSecret: TEST_SECRET, rootHandlers: true, overloadMaxEventLoopDelay: 0, resources: [notes, safes], migrations })
  // The host's routes: who calls is the token's user; every rule is the resource's.
  app.get('/mine/notes', async (request) => {
    const caller = await app.accessTokens.authenticate(request)
    return await app.tandemResources(notes).list(caller, { limit: 5 })
  })
  app.post('/mine/notes', async (request, reply) => {
    const caller = await app.accessTokens.authenticate(request)
    return reply.code(201).send(await app.tandemResources(notes).create(caller, request.body as Record<string, unknown>))
  })
  app.get('/any/notes/:id', async (request) => {
    const caller = await app.accessTokens.authenticate(request)
    return await app.tandemResources(notes).get(caller, Number((request.params as { id: string }).id)) ?? { missing: true }
  })
  await app.ready()
  t.teardown(() => app.close())
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const callerOf = async (headers: { authorization: string }): Promise<AccessUser> => await app.accessTokens.verify(headers.authorization.slice('Bearer '.length))
  return { app, ann, bob, asAnn: await callerOf(ann.headers), asBob: await callerOf(bob.headers), asAdmin: await callerOf(await adminToken(app)) }
}

/** What `promise` is refused with: the error's code, or 'none'. */
async function refusal (promise: Promise<unknown>): Promise<string> {
  try {
    await promise
    return 'none'
  } catch (error) {
    return error instanceof TandemError ? error.code : 'not a TandemError'
  }
}

t.test('a caller that applies no rule still cannot read another owner\'s rows or hidden fields', async (t) => {
  const { app, asAnn, asBob, asAdmin } = await setUp(t)
  const served = app.tandemResources(notes)
  const annsNote = await served.create(asAnn, { title: 'Ann\'s', secret: 'her secret' })
  t.same(annsNote, { id: annsNote.id, owner_id: asAnn.sub, title: 'Ann\'s', secret: 'her secret' }, 'a create answers its caller the whole row, owner set to them')
  t.equal((await served.get(asBob, annsNote.id))?.secret, null, 'a field only its owner reads is null for another caller')
  t.equal((await served.get(asAnn, annsNote.id))?.secret, 'her secret', '…and shown to its owner')
  t.same((await served.list(asBob, { title: 'Ann\'s' })).data.map((row) => row.secret), [null], 'in lists too')
  t.same((await served.list(asBob, { title: 'Ann\'s', fields: 'id,secret' })).data, [{ id: annsNote.id, secret: null }], 'with fields=, which leaves the owner column out again')

  const safe = app.tandemResources(safes)
  const annsSafe = await safe.create(asAnn, { name: 'vault' })
  t.same((await safe.list(asBob)).data, [], 'an owner read rule narrows lists to the caller\'s rows')
  t.same((await safe.list(asAnn)).data.map(({ id }) => id), [annsSafe.id])
  t.equal(await refusal(safe.get(asBob, annsSafe.id)), 'TANDEM_ERR_FORBIDDEN', 'othersRows: forbidden refuses another\'s row')
  t.equal((await safe.get(asAdmin, annsSafe.id))?.name, 'vault', 'ownerOrAdmin admits an administrator')
  t.equal(await refusal(safe.list(undefined)), 'TANDEM_ERR_UNAUTHENTICATED', 'no caller for a rule that needs one: 401')
  t.equal(await safe.readable(asBob, annsSafe.id), false)
})

t.test('a caller that applies no rule still cannot change another owner\'s rows', async (t) => {
  const { app, asAnn, asBob } = await setUp(t)
  const served = app.tandemResources(notes)
  const annsNote = await served.create(asAnn, { title: 'Ann\'s', secret: null })
  t.equal(await refusal(served.update(asBob, annsNote.id, { title: 'Bob was here' })), 'TANDEM_ERR_FORBIDDEN', 'update: the owner rule on the locked row')
  t.equal(await refusal(served.replace(asBob, annsNote.id, { title: 'Bob was here' })), 'TANDEM_ERR_FORBIDDEN', 'replace')
  t.equal(await refusal(served.remove(asBob, annsNote.id)), 'TANDEM_ERR_FORBIDDEN', 'remove')
  t.equal(await refusal(served.act(asBob, 'pin', annsNote.id)), 'TANDEM_ERR_FORBIDDEN', 'an action')
  t.equal(await refusal(served.update(undefined, annsNote.id, { title: 'nobody' })), 'TANDEM_ERR_UNAUTHENTICATED', 'no caller at all')
  t.equal(await refusal(served.create(undefined, { title: 'nobody' })), 'TANDEM_ERR_UNAUTHENTICATED', 'nor a create without one')
  t.equal(await refusal(served.create(asBob, { title: 'Bob\'s', owner_id: asAnn.sub })), 'TANDEM_ERR_BAD_REQUEST', 'a body is the declaration\'s: it names no owner')
  t.equal(await refusal(served.update(asAnn, annsNote.id, { owner_id: asBob.sub })), 'TANDEM_ERR_BAD_REQUEST', 'nor does a change')
  t.equal(await refusal(served.act(asAnn, 'pin', annsNote.id, { anything: 1 })), 'TANDEM_ERR_BAD_REQUEST', 'an action without input takes none')

  const safe = app.tandemResources(safes)
  const annsSafe = await safe.create(asAnn, { name: 'vault' })
  t.equal(await refusal(safe.update(asBob, annsSafe.id, { name: 'mine now' })), 'TANDEM_ERR_FORBIDDEN')
  const rows = await sql<{ title: string, name: string }>`select (select title from notes where id = ${annsNote.id}) as title, (select name from safes where id = ${annsSafe.id}) as name`.execute(app.db)
  t.same(rows.rows, [{ title: 'Ann\'s', name: 'vault' }], 'nothing of Ann\'s changed')
  t.ok(await served.update(asAnn, annsNote.id, { title: 'still Ann\'s' }), 'the owner changes it')
})

t.test('a host\'s own route lists and creates through the served resource with its caller\'s rules', async (t) => {
  const { app, ann, bob } = await setUp(t)
  const created = await app.inject({ method: 'POST', url: '/mine/notes', headers: ann.headers, payload: { title: 'from the host route', secret: 's' } })
  t.equal(created.statusCode, 201)
  const note = body<{ id: number, owner_id: number }>(created)
  t.equal(note.owner_id, ann.id)
  t.same(body<{ data: unknown[] }>(await app.inject({ url: '/mine/notes', headers: bob.headers })).data, [{ ...note, secret: null }], 'Bob lists it without its secret')
  t.equal(body(await app.inject({ url: `/any/notes/${note.id}`, headers: ann.headers })).secret, 's')
  const anonymous = await app.inject({ url: '/mine/notes' })
  t.equal(anonymous.statusCode, 401, 'no token: 401')
  const invalid = await app.inject({ method: 'POST', url: '/mine/notes', headers: ann.headers, payload: { title: 'a', secret: 's', created_at: 'now' } })
  t.same([invalid.statusCode, body(invalid).field], [400, 'created_at'], 'a body the declaration does not take: 400 naming the field')
})

t.test('app.tandemResources knows the served resources only', async (t) => {
  const { app } = await setUp(t)
  t.equal(app.tandemResources('note').resource, notes, 'by name')
  t.equal(app.tandemResources('product').resource.name, 'product', 'the built-in ones too')
  t.throws(() => app.tandemResources('nothing'), /not a resource this application serves/)
  const twin = defineResource({ ...notes.declaration, representation: notes.representation } as Parameters<typeof defineResource>[0])
  t.throws(() => app.tandemResources(twin), /not a resource this application serves/, 'a declaration tandem was not given, even of the same name')
})

t.test('the rows of one owner: an owner read rule admits only the caller\'s own, and a missing owner is a 404', async (t) => {
  const { app, ann, asAnn, asBob, asAdmin } = await setUp(t)
  const safe = app.tandemResources(safes)
  const annsSafe = await safe.create(asAnn, { name: 'vault' })
  await safe.create(asBob, { name: 'Bob\'s' })
  t.same((await safe.list(asAnn, {}, { owner: ann.id })).data.map(({ id }) => id), [annsSafe.id], 'one\'s own')
  t.same((await safe.list(asAdmin, {}, { owner: ann.id })).data.map(({ id }) => id), [annsSafe.id], 'an administrator lists anyone\'s')
  t.equal(await refusal(safe.list(asBob, {}, { owner: ann.id })), 'TANDEM_ERR_FORBIDDEN', 'another caller is refused, not shown their own instead')
  const { rows: [max] } = await sql<{ id: number }>`select max(id) + 1000 as id from users`.execute(app.db)
  t.equal(await refusal(safe.list(asAdmin, {}, { owner: max?.id as number })), 'TANDEM_ERR_NOT_FOUND', 'no such owner')
  const notes_ = app.tandemResources(notes)
  await notes_.create(asAnn, { title: 'a' })
  t.same((await notes_.list(asBob, {}, { owner: ann.id })).data.map(({ title }) => title), ['a'], 'a resource every signed-in user reads lists anyone\'s')
})

t.test('an id from a host\'s code that is not a positive integer is the contract\'s 400, never a database error', async (t) => {
  const { app, asAnn } = await setUp(t)
  const served = app.tandemResources(notes)
  const note = await served.create(asAnn, { title: 'a' })
  for (const id of [Number.NaN, -1, 0, 1.5, Number.MAX_SAFE_INTEGER + 2]) {
    t.equal(await refusal(served.get(asAnn, id)), 'TANDEM_ERR_BAD_REQUEST', `get ${id}`)
    t.equal(await refusal(served.update(asAnn, id, { title: 'b' })), 'TANDEM_ERR_BAD_REQUEST', `update ${id}`)
    t.equal(await refusal(served.remove(asAnn, id)), 'TANDEM_ERR_BAD_REQUEST', `remove ${id}`)
    t.equal(await refusal(served.act(asAnn, 'pin', id)), 'TANDEM_ERR_BAD_REQUEST', `act ${id}`)
    t.equal(await refusal(served.list(asAnn, {}, { owner: id })), 'TANDEM_ERR_BAD_REQUEST', `list of owner ${id}`)
  }
  t.equal((await served.get(asAnn, note.id))?.title, 'a', 'a good id still reads')
})
