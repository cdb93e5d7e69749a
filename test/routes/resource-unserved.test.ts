// A write declared with the rule `false` is not served at all: no REST route (the router's 404), no
// GraphQL mutation or input, no OpenAPI entry; and an event it would announce is a start error.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, resourceSdl, Type } from '../../index.js'
import { apiClient, body, build, graphql, signedIn } from '../helpers/app.js'

// Notes that are written once and never edited: they may be created and deleted, not updated.
const notes = defineResource({
  name: 'note',
  table: 'notes',
  representation: Type.Object({ id: Type.Integer(), writer_id: Type.Integer(), text: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'writer_id',
  writable: ['text'],
  auth: { read: 'authenticated', create: 'authenticated', update: false, delete: 'ownerOrAdmin' },
  events: ['created', 'deleted']
})

// Entries kept for good: created, never changed nor deleted.
const entries = defineResource({
  name: 'entry',
  table: 'entries',
  representation: Type.Object({ id: Type.Integer(), text: Type.String() }),
  generated: ['id'],
  writable: ['text'],
  auth: { update: false, delete: false }
})

const migrations = {
  '0001_notes': {
    async up (db: Kysely<any>) {
      await sql`create table notes (id serial primary key, writer_id integer not null references users (id) on delete cascade, text text not null)`.execute(db)
      await sql`create table entries (id serial primary key, text text not null)`.execute(db)
    }
  }
}

t.test('REST: the unserved writes answer 404 as unknown paths do; the others work as before', async (t) => {
  const app = await build(t, { resources: [notes, entries], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const asAnn = apiClient(app, ann.headers)
  const note = await asAnn('POST', '/notes', { text: 'first' })
  t.equal(note.statusCode, 201)
  const id = body<{ id: number }>(note).id
  for (const method of ['PUT', 'PATCH'] as const) {
    const refused = await asAnn(method, `/notes/${id}`, { text: 'changed' })
    t.same([refused.statusCode, body(refused)], [404, { error: `no route ${method} /api/v1/notes/${id}` }], `${method} is not a route`)
    t.equal((await apiClient(app)(method, `/notes/${id}`, { text: 'changed' })).statusCode, 404, `${method} without a token is not a route either`)
  }
  t.match(body(await asAnn('GET', `/notes/${id}`)), { text: 'first' }, 'the note is unchanged')
  t.equal((await asAnn('DELETE', `/notes/${id}`)).statusCode, 204, 'a served write is served')

  const entry = await asAnn('POST', '/entries', { text: 'kept' })
  t.equal(entry.statusCode, 201)
  t.equal((await asAnn('DELETE', `/entries/${body<{ id: number }>(entry).id}`)).statusCode, 404)
  t.equal((await asAnn('GET', '/entries')).statusCode, 200)
})

t.test('GraphQL and OpenAPI: no mutation, no input, no entry for an unserved write', async (t) => {
  const app = await build(t, { resources: [notes, entries], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const sdl = resourceSdl([notes, entries])
  t.match(sdl, /createNote\(input: CreateNoteInput!\): Note/)
  t.match(sdl, /deleteNote\(id: ID!\): Boolean/)
  t.notMatch(sdl, /updateNote|UpdateNoteInput|noteUpdated|updateEntry|deleteEntry|UpdateEntryInput/)
  t.match(sdl, /noteCreated.*\n.*\n.*noteDeleted/, 'the events of served writes')

  const made = await graphql(app, 'mutation { createNote(input: {text: "by GraphQL"}) { id text } }', { headers: ann.headers })
  t.match(made.data, { createNote: { text: 'by GraphQL' } })
  const update = await graphql(app, `mutation { updateNote(id: "${String(made.data?.createNote.id)}", input: {text: "x"}) { id } }`, { headers: ann.headers })
  t.match(update.errors, [{ message: /Cannot query field "updateNote" on type "Mutation"/, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }])

  const document = body<{ paths: Record<string, Record<string, unknown>> }>(await app.inject({ url: '/openapi.json' }))
  t.same(Object.keys(document.paths['/api/v1/notes/{id}'] ?? {}).sort(), ['delete', 'get'])
  t.same(Object.keys(document.paths['/api/v1/entries/{id}'] ?? {}).sort(), ['get'])
  t.same(Object.keys(document.paths['/api/v1/entries'] ?? {}).sort(), ['get', 'post'])
})

t.test('mistaken uses of false fail at start, naming the mistake', async (t) => {
  const declare = (extra: object) => () => defineResource({ ...notes.declaration, ...extra } as Parameters<typeof defineResource>[0])
  t.throws(declare({ auth: { read: false } }), /auth\.read must be one of public, authenticated, admin, owner or ownerOrAdmin \(a resource is always readable by someone: never false\)/)
  t.throws(declare({ events: ['updated'] }), /the event updated is never announced: its write is not served \(auth false\)/)
  t.throws(declare({ auth: { create: false }, events: ['created'] }), /the event created is never announced/)
  t.doesNotThrow(declare({ events: ['updated'], actions: { pin: { auth: 'owner', run: async ({ row }: { row: object }) => row } } }), 'an action announces updated')
  t.doesNotThrow(() => defineResource({ ...entries.declaration, writable: [], auth: { create: false, update: false } } as Parameters<typeof defineResource>[0]), 'nothing writable when nothing is written')
  t.throws(() => defineResource({ ...entries.declaration, writable: [], auth: { update: false } } as Parameters<typeof defineResource>[0]), /at least one field must be writable/)
})
