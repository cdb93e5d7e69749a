// Options of defineResource that the built-in orders needed, for every host: fields loaded with the
// rows from another table (`loaded`), a create with a body of its own whose code writes the row
// (`create`), and an owner read rule that answers 403 for another owner's row (`othersRows`).
import { sql, type Generated, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, resourceSdl, Type } from '../../index.js'
import type { Db } from '../../db/connect.js'
import { adminToken, apiClient, body, build, errorCodes, graphql, signedIn, testDb } from '../helpers/app.js'
import { recordSql } from '../helpers/sql-log.js'

type Line = { sku: string, quantity: number }
type Basket = { id: number, owner_id: number, note: string, lines: Line[] }

const BasketLine = Type.Object({ sku: Type.String({ minLength: 1 }), quantity: Type.Integer({ minimum: 1 }) }, { title: 'BasketLine', additionalProperties: false })

interface LineRow { basket_id: number, sku: string, quantity: number }
const tables = (db: Db) => db.withTables<{ baskets: { id: Generated<number>, owner_id: number, note: string }, basket_lines: LineRow }>()

/** The lines of every basket of `ids`, in one statement. */
async function linesOf (db: Db, ids: readonly number[]): Promise<Map<number, Line[]>> {
  const byBasket = new Map<number, Line[]>(ids.map((id) => [id, []]))
  const rows = await tables(db).selectFrom('basket_lines').select(['basket_id', 'sku', 'quantity']).where('basket_id', 'in', ids).orderBy('basket_id').orderBy('sku').execute()
  for (const { basket_id: id, ...line } of rows) byBasket.get(Number(id))?.push(line)
  return byBasket
}

const baskets = defineResource({
  name: 'basket',
  table: 'baskets',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), note: Type.String(), lines: Type.Array(BasketLine) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['note'],
  loaded: { lines: { load: linesOf } },
  create: {
    input: Type.Object({ note: Type.String(), lines: Type.Array(Type.Object({ sku: Type.String({ minLength: 1 }), quantity: Type.Integer({ minimum: 1 }) }, { additionalProperties: false }), { minItems: 1 }) }),
    summary: 'Fill a basket',
    async run ({ trx, caller, input }) {
      const lines = [...input.lines as Line[]].sort((a, b) => a.sku.localeCompare(b.sku))
      const row = await tables(trx).insertInto('baskets').values({ owner_id: caller?.sub as number, note: input.note as string }).returning(['id', 'owner_id', 'note']).executeTakeFirstOrThrow()
      await tables(trx).insertInto('basket_lines').values(lines.map((line) => ({ basket_id: row.id, ...line }))).execute()
      return { ...row, lines }
    }
  },
  relations: { owner: { belongsTo: 'user', key: 'owner_id', required: true } },
  auth: { read: 'ownerOrAdmin', create: 'authenticated', update: 'owner', delete: 'owner' },
  othersRows: 'forbidden',
  actions: {
    // Returns the row without its lines: the data layer loads them for the answer.
    empty: {
      auth: 'owner',
      async run ({ trx, row }) {
        await tables(trx).deleteFrom('basket_lines').where('basket_id', '=', row.id).execute()
        return await tables(trx).selectFrom('baskets').select(['id', 'owner_id', 'note']).where('id', '=', row.id).executeTakeFirstOrThrow() as Basket
      }
    }
  }
})

// Stickers on baskets: a relation whose target has a loaded field.
const stickers = defineResource({
  name: 'sticker',
  table: 'stickers',
  representation: Type.Object({ id: Type.Integer(), basket_id: Type.Integer(), text: Type.String() }),
  generated: ['id'],
  writable: ['basket_id', 'text'],
  relations: { basket: { belongsTo: 'basket', key: 'basket_id', inverse: 'stickers' } }
})

const migrations = {
  '0001_baskets': {
    async up (db: Kysely<any>) {
      await sql`create table baskets (id serial primary key, owner_id integer not null references users (id) on delete cascade, note text not null)`.execute(db)
      await sql`create table basket_lines (basket_id integer not null references baskets (id) on delete cascade, sku text not null, quantity integer not null, primary key (basket_id, sku))`.execute(db)
      await sql`create table stickers (id serial primary key, basket_id integer not null references baskets (id) on delete cascade, text text not null)`.execute(db)
    }
  }
}

async function setUp (t: Parameters<typeof build>[0], db?: Db) {
  const app = await build(t, { resources: [baskets, stickers], migrations, ...db === undefined ? {} : { db } })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const admin = await adminToken(app)
  return { app, ann, bob, admin, asAnn: apiClient(app, ann.headers), asBob: apiClient(app, bob.headers), asAdmin: apiClient(app, admin) }
}

t.test('create: a body of its own, written by the declaration\'s code with the conventions of every create', async (t) => {
  const { app, ann, asAnn } = await setUp(t)
  const made = await asAnn('POST', '/baskets', { note: 'weekend', lines: [{ sku: 'tea', quantity: 2 }, { sku: 'bread', quantity: 1 }] })
  t.equal(made.statusCode, 201)
  const basket = body<Basket>(made)
  t.same(basket, { id: basket.id, owner_id: ann.id, note: 'weekend', lines: [{ sku: 'bread', quantity: 1 }, { sku: 'tea', quantity: 2 }] })
  t.equal(made.headers.location, `/api/v1/baskets/${basket.id}`)
  t.match(made.headers.etag, /^"/)

  for (const [payload, field] of [[{ note: 'x', lines: [] }, 'lines'], [{ note: 'x', lines: [{ sku: 'tea', quantity: 0 }] }, 'lines.0.quantity'], [{ note: 'x', lines: [{ sku: 'tea', quantity: 1 }], owner_id: 2 }, 'owner_id']] as const) {
    const refused = await asAnn('POST', '/baskets', payload)
    t.same([refused.statusCode, body(refused).field], [400, field], 'the input schema checks the body, closed to other fields')
  }
  // A failure of the code undoes what it wrote: the same sku twice breaks the lines' primary key.
  const twice = await asAnn('POST', '/baskets', { note: 'x', lines: [{ sku: 'tea', quantity: 1 }, { sku: 'tea', quantity: 2 }] })
  t.equal(twice.statusCode, 409)
  t.same((await sql<{ n: number }>`select count(*)::int as n from baskets`.execute(app.db)).rows, [{ n: 1 }], 'no basket without its lines')

  const headers = { 'idempotency-key': 'basket-once' }
  const payload = { note: 'once', lines: [{ sku: 'jam', quantity: 1 }] }
  const first = await app.inject({ method: 'POST', url: '/api/v1/baskets', headers: { ...ann.headers, ...headers }, payload })
  const again = await app.inject({ method: 'POST', url: '/api/v1/baskets', headers: { ...ann.headers, ...headers }, payload })
  t.same([first.statusCode, again.statusCode, body(again)], [201, 201, body(first)], 'Idempotency-Key replays the first answer')
  t.same((await sql<{ n: number }>`select count(*)::int as n from baskets`.execute(app.db)).rows, [{ n: 2 }])

  const doc = body<{ paths: Record<string, any> }>(await app.inject({ method: 'GET', url: '/openapi.json' }))
  t.equal(doc.paths['/api/v1/baskets']?.post.summary, 'Fill a basket')
  // One object, or an array of them (bulk writes).
  t.ok(doc.paths['/api/v1/baskets']?.post.requestBody.content['application/json'].schema.anyOf[0].properties.lines, 'OpenAPI shows the input')
})

t.test('loaded: a field from another table, one statement per page, in fields= but not in sort or filters', async (t) => {
  const { db, statements } = recordSql(await testDb())
  const { app, ann, asAnn, asAdmin } = await setUp(t, db)
  for (let i = 1; i <= 5; i++) t.equal((await asAnn('POST', '/baskets', { note: `b${i}`, lines: [{ sku: 'a', quantity: i }, { sku: 'b', quantity: 1 }] })).statusCode, 201)

  for (const limit of [2, 5]) {
    statements.length = 0
    const page = body<{ data: Basket[] }>(await asAdmin('GET', `/baskets?limit=${limit}&include=owner`))
    t.equal(page.data.length, limit)
    t.ok(page.data.every((basket) => basket.lines.length === 2 && (basket as Basket & { owner: { name: string } }).owner.name === 'Ann'))
    t.equal(statements.filter((s) => /"(baskets|basket_lines|users)"/.test(s)).length, 3, `limit=${limit}: the page, its lines, its owners`)
  }
  statements.length = 0
  t.same(body<{ data: unknown[] }>(await asAnn('GET', '/baskets?fields=note&limit=2')).data, [{ id: 1, note: 'b1' }, { id: 2, note: 'b2' }])
  t.equal(statements.filter((s) => /basket_lines/.test(s)).length, 0, 'not asked, not loaded')
  t.same(body(await asAnn('GET', '/baskets/3?fields=lines')), { id: 3, lines: [{ sku: 'a', quantity: 3 }, { sku: 'b', quantity: 1 }] })
  const unknown = await asAnn('GET', '/baskets?fields=price')
  t.same([unknown.statusCode, body(unknown)], [400, { error: 'fields names a field the rows do not have; fields: id, owner_id, note, lines', field: 'fields' }])
  t.equal(body(await asAnn('GET', '/baskets?sort=lines')).field, 'sort')

  // Writes answer the whole row: a PATCH with the ETag a read gave, and an action that did not return the lines.
  const read = await asAnn('GET', '/baskets/1')
  const patched = await app.inject({ method: 'PATCH', url: '/api/v1/baskets/1', headers: { ...ann.headers, 'if-match': read.headers.etag as string }, payload: { note: 'changed' } })
  t.same([patched.statusCode, body<Basket>(patched).lines], [200, body<Basket>(read).lines], 'If-Match compares the whole row')
  t.same(body(await asAnn('POST', '/baskets/2/empty')), { id: 2, owner_id: body<Basket>(read).owner_id, note: 'b2', lines: [] })
})

t.test('othersRows: forbidden: another owner\'s row is 403, in both styles; lists show one\'s own', async (t) => {
  const { app, bob, admin, asAnn, asBob, asAdmin } = await setUp(t)
  const basket = body<Basket>(await asAnn('POST', '/baskets', { note: 'mine', lines: [{ sku: 'tea', quantity: 1 }] }))
  await asBob('POST', '/baskets', { note: 'his', lines: [{ sku: 'jam', quantity: 1 }] })
  const refused = await asBob('GET', `/baskets/${basket.id}`)
  t.same([refused.statusCode, body(refused)], [403, { error: 'only its owner or an administrator may read this basket' }])
  t.equal((await asAdmin('GET', `/baskets/${basket.id}`)).statusCode, 200)
  t.equal((await asBob('GET', '/baskets/999')).statusCode, 404)
  t.same(body<{ data: Basket[] }>(await asBob('GET', '/baskets')).data.map((row) => row.note), ['his'])
  t.same(body<{ data: Basket[] }>(await asAdmin('GET', '/baskets')).data.map((row) => row.note), ['mine', 'his'])

  t.same(errorCodes(await graphql(app, `{ basket(id: "${basket.id}") { note } }`, { headers: bob.headers })), ['FORBIDDEN'])
  t.same((await graphql(app, '{ basket(id: "999") { note } }', { headers: bob.headers })).data, { basket: null })
  t.same((await graphql(app, `{ basket(id: "${basket.id}") { note lines { sku quantity } } }`, { headers: admin })).data, { basket: { note: 'mine', lines: [{ sku: 'tea', quantity: 1 }] } })
})

t.test('GraphQL: the loaded field typed by its title, and the create\'s own input, nested', async (t) => {
  const { app, ann } = await setUp(t)
  const sdl = resourceSdl([baskets])
  t.match(sdl, /type Basket \{[^}]*lines: \[BasketLine!\]!/)
  t.match(sdl, /type BasketLine \{\n {2}sku: String!\n {2}quantity: Int!\n\}/)
  t.match(sdl, /input CreateBasketInput \{\n {2}note: String!\n {2}lines: \[CreateBasketInputLines!\]!\n\}/)
  t.match(sdl, /input CreateBasketInputLines \{\n {2}sku: String!\n {2}quantity: Int!\n\}/)

  const made = await graphql(app, 'mutation { createBasket(input: { note: "by GraphQL", lines: [{ sku: "tea", quantity: 2 }] }) { note ownerId lines { sku quantity } owner { name } } }', { headers: ann.headers })
  t.same(made.data, { createBasket: { note: 'by GraphQL', ownerId: String(ann.id), lines: [{ sku: 'tea', quantity: 2 }], owner: { name: 'Ann' } } })
  const bad = await graphql(app, 'mutation { createBasket(input: { note: "x", lines: [{ sku: "tea", quantity: 0 }] }) { id } }', { headers: ann.headers })
  t.match(bad.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'lines.0.quantity' } }])
  const listed = await graphql(app, '{ baskets { note lines { sku } } basketsConnection { edges { node { lines { quantity } } } } }', { headers: ann.headers })
  t.same(listed.data, { baskets: [{ note: 'by GraphQL', lines: [{ sku: 'tea' }] }], basketsConnection: { edges: [{ node: { lines: [{ quantity: 2 }] } }] } })
})

t.test('loaded fields of a relation\'s target are loaded where it is embedded, in both styles', async (t) => {
  const { app, ann, asAnn } = await setUp(t)
  const basket = body<Basket>(await asAnn('POST', '/baskets', { note: 'mine', lines: [{ sku: 'tea', quantity: 2 }] }))
  t.equal((await asAnn('POST', '/stickers', { basket_id: basket.id, text: 'fragile' })).statusCode, 201)
  t.same(body<{ data: unknown[] }>(await asAnn('GET', '/stickers?include=basket')).data, [{ id: 1, basket_id: basket.id, text: 'fragile', basket }])
  t.same(body<{ stickers: unknown[] }>(await asAnn('GET', `/baskets/${basket.id}?include=stickers&fields=note`)), { id: basket.id, note: 'mine', stickers: [{ id: 1, basket_id: basket.id, text: 'fragile' }] })
  const nested = await graphql(app, '{ stickers { text basket { note lines { sku quantity } } } }', { headers: ann.headers })
  t.same(nested.data, { stickers: [{ text: 'fragile', basket: { note: 'mine', lines: [{ sku: 'tea', quantity: 2 }] } }] })
})

t.test('mistaken uses of loaded and create fail at start, naming the mistake', async (t) => {
  const declare = (extra: object) => () => defineResource({ ...baskets.declaration, ...extra } as Parameters<typeof defineResource>[0])
  t.throws(declare({ sort: ['lines'] }), /lines is loaded, so it cannot be in sort/)
  t.throws(declare({ filters: ['lines'] }), /lines is loaded, so it cannot be in filters/)
  t.throws(declare({ loaded: { lines: {} } }), /loaded\.lines\.load is required/)
  t.throws(declare({ loaded: { basket: { load: linesOf } } }), /loaded names basket, which is not in the representation/)
  t.throws(declare({ hooks: { beforeCreate () {} } }), /create: its run writes the row, so beforeCreate would not run/)
  t.throws(declare({ create: { input: Type.Object({}), run: async () => ({}) } }), /create\.input must be a Type\.Object with at least one field/)
  t.throws(declare({ create: { input: baskets.declaration.create?.input } }), /create\.run is required/)
  t.throws(declare({ create: undefined, writable: [] }), /at least one field must be writable/)
  t.throws(declare({ othersRows: 'secret' }), /othersRows must be hidden or forbidden/)
})
