// Plurals from English rules (issue 40, 10): a resource's paths and GraphQL list names are its name's
// English plural (inflection's rules, on the last word of a camelCase name) unless `plural` says
// otherwise, and two resources whose names and plurals collide are a start error naming both.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, Type } from '../../index.js'
import { builtInResources } from '../../rules/built-in-resources.js'
import { pluralName } from '../../schema/plural.js'
import { apiClient, body, build, graphql, signedIn } from '../helpers/app.js'

// People, their diary entries listed under them, their guesses, and an order's line items: none says `plural`.
const people = defineResource({
  name: 'person',
  table: 'people',
  representation: Type.Object({ id: Type.Integer(), name: Type.String() }),
  generated: ['id'],
  writable: ['name'],
  auth: { read: 'authenticated', create: 'authenticated', update: 'admin', delete: 'admin' }
})
const entries = defineResource({
  name: 'entry',
  table: 'entries',
  representation: Type.Object({ id: Type.Integer(), person_id: Type.Integer(), text: Type.String() }),
  generated: ['id'],
  writable: ['person_id', 'text'],
  filters: ['person_id'],
  relations: { person: { belongsTo: 'person', key: 'person_id', under: 'also' } },
  bulk: { delete: 'admin' }
})
const guesses = defineResource({
  name: 'guess',
  table: 'guesses',
  representation: Type.Object({ id: Type.Integer(), word: Type.String() }),
  generated: ['id'],
  writable: ['word']
})
const lineItems = defineResource({
  name: 'lineItem',
  table: 'line_items',
  representation: Type.Object({ id: Type.Integer(), quantity: Type.Integer() }),
  generated: ['id'],
  writable: ['quantity']
})

const migrations = {
  '0001_plurals': {
    async up (db: Kysely<any>) {
      await sql`create table people (id serial primary key, name text not null)`.execute(db)
      await sql`create table entries (id serial primary key, person_id integer not null references people (id), text text not null)`.execute(db)
      await sql`create index entries_person_id_idx on entries (person_id, id)`.execute(db)
      await sql`create table guesses (id serial primary key, word text not null)`.execute(db)
      await sql`create table line_items (id serial primary key, quantity integer not null)`.execute(db)
      await sql`create table safes (id serial primary key, name text not null)`.execute(db)
    }
  }
}

/** The application over these resources, their tables emptied (the test database outlives each application). */
async function served (t: Parameters<typeof build>[0]) {
  const app = await build(t, { resources: [people, entries, guesses, lineItems], migrations })
  await sql`truncate people, entries, guesses, line_items restart identity`.execute(app.db)
  return app
}

t.test('the plural is English: entry at /entries, guess at /guesses, person at /people, lineItem at /lineItems', async (t) => {
  t.same([people, entries, guesses, lineItems].map((resource) => resource.plural), ['people', 'entries', 'guesses', 'lineItems'])
  t.same(['status', 'category', 'box', 'child', 'salesPerson', 'orderItem'].map(pluralName), ['statuses', 'categories', 'boxes', 'children', 'salesPeople', 'orderItems'])
  t.same(builtInResources.map((resource) => resource.plural), ['users', 'products', 'posts', 'profiles', 'comments', 'orders'], 'the built-ins keep their paths')
})

t.test('REST serves the English plurals, in paths, nested lists and OpenAPI', async (t) => {
  const app = await served(t)
  const ann = await signedIn(app, { name: 'Ann' })
  const asAnn = apiClient(app, ann.headers)
  const person = await asAnn('POST', '/people', { name: 'Pepys' })
  t.equal(person.statusCode, 201)
  const id = body<{ id: number }>(person).id
  t.match(person.headers.location, `/api/v1/people/${id}`)
  const entry = await asAnn('POST', '/entries', { person_id: id, text: 'And so to bed' })
  t.equal(entry.statusCode, 201)
  t.match(body(await asAnn('GET', '/entries')), { data: [{ text: 'And so to bed' }] })
  t.match(body(await asAnn('GET', `/people/${id}/entries`)), { data: [{ text: 'And so to bed' }] }, 'a list under its parent\'s plural')
  t.equal((await asAnn('POST', '/guesses', { word: 'bed' })).statusCode, 201)
  t.equal((await asAnn('POST', '/lineItems', { quantity: 2 })).statusCode, 201)
  for (const wrong of ['/entrys', '/guesss', '/persons', '/lineItemss']) t.equal((await asAnn('GET', wrong)).statusCode, 404, `${wrong} is not a path`)

  const document = body<{ paths: Record<string, unknown> }>(await app.inject({ url: '/openapi.json' }))
  for (const path of ['/api/v1/people', '/api/v1/people/{id}', '/api/v1/entries', '/api/v1/entries/{id}', '/api/v1/people/{id}/entries', '/api/v1/guesses', '/api/v1/lineItems']) {
    t.ok(document.paths[path], `OpenAPI lists ${path}`)
  }
})

t.test('GraphQL names the lists, connections and bulk writes by the English plural', async (t) => {
  const app = await served(t)
  const ann = await signedIn(app, { name: 'Ann' })
  const made = await graphql(app, 'mutation { createPerson(input: {name: "Pepys"}) { id } }', { headers: ann.headers })
  const personId = String(made.data?.createPerson.id)
  const batch = await graphql(app, `mutation { createEntries(inputs: [{personId: "${personId}", text: "one"}, {personId: "${personId}", text: "two"}]) { text } }`, { headers: ann.headers })
  t.same(batch.data, { createEntries: [{ text: 'one' }, { text: 'two' }] })
  await graphql(app, 'mutation { createGuess(input: {word: "bed"}) { id } createLineItems(inputs: [{quantity: 2}]) { id } }', { headers: ann.headers })
  const read = await graphql(app, '{ people { name } entries { text } entriesConnection(first: 1) { edges { node { text } } } guesses { word } lineItems { quantity } }', { headers: ann.headers })
  t.same(read.errors, undefined)
  t.same(read.data, {
    people: [{ name: 'Pepys' }],
    entries: [{ text: 'one' }, { text: 'two' }],
    entriesConnection: { edges: [{ node: { text: 'one' } }] },
    guesses: [{ word: 'bed' }],
    lineItems: [{ quantity: 2 }]
  })
  const old = await graphql(app, '{ entrys { text } }', { headers: ann.headers })
  t.match(old.errors, [{ extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }], 'entrys is no field')
})

t.test('plural still overrides the English rules', async (t) => {
  const safe = { table: 'safes', representation: Type.Object({ id: Type.Integer(), name: Type.String() }), generated: ['id'] as Array<'id'>, writable: ['name'] as Array<'name'> }
  t.equal(defineResource({ ...safe, name: 'safe' }).plural, 'saves', 'where the rules miss')
  const safes = defineResource({ ...safe, name: 'safe', plural: 'safes' })
  t.equal(safes.plural, 'safes')
  const app = await build(t, { resources: [safes], migrations })
  await sql`truncate safes`.execute(app.db)
  const ann = await signedIn(app, { name: 'Ann' })
  t.equal((await apiClient(app, ann.headers)('POST', '/safes', { name: 'vault' })).statusCode, 201)
  t.same((await graphql(app, '{ safes { name } }', { headers: ann.headers })).data, { safes: [{ name: 'vault' }] })
})

t.test('a plural that is the name, or a name and plural two resources share, fails at start naming them', async (t) => {
  const thing = { representation: Type.Object({ id: Type.Integer(), name: Type.String() }), generated: ['id'] as Array<'id'>, writable: ['name'] as Array<'name'> }
  t.throws(() => defineResource({ ...thing, name: 'news', table: 'news' }), /defineResource\("news"\): news is its own plural in English: give `plural`/)
  t.throws(() => defineResource({ ...thing, name: 'tag', plural: 'tag', table: 'tags' }), /defineResource\("tag"\): plural: tag is the resource's name/)
  t.equal(defineResource({ ...thing, name: 'news', plural: 'newsItems', table: 'news' }).plural, 'newsItems')

  // person's list is GraphQL `people`, which would be the row of a resource named people too.
  const crowd = defineResource({ ...thing, name: 'people', plural: 'crowds', table: 'crowds' })
  await t.rejects(build(t, { resources: [people, crowd] }), /defineResource\("people"\): the name people is the plural of another declared resource, defineResource\("person"\): GraphQL's people would be both a row and a list/)
  await t.rejects(build(t, { resources: [crowd, people] }), /defineResource\("person"\): the plural people is the name of another declared resource, defineResource\("people"\)/)
  const human = defineResource({ ...thing, name: 'human', plural: 'people', table: 'humans' })
  await t.rejects(build(t, { resources: [people, human] }), /defineResource\("human"\): the path \/people is taken by another declared resource, defineResource\("person"\)/)
  const member = defineResource({ ...thing, name: 'users', plural: 'members', table: 'members' })
  await t.rejects(build(t, { resources: [member] }), /defineResource\("users"\): the name users is the plural of a built-in resource, defineResource\("user"\)/)
})
