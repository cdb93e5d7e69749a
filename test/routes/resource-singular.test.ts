// A singular resource (defineResource's `key` and `singularOf`): one row per row of its parent,
// sharing its key, served under the parent in both styles, with no list, create or delete.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, resourceSdl, Type } from '../../index.js'
import { adminToken, apiClient, body, build, errorCodes, graphql, signedIn, testDb } from '../helpers/app.js'
import { recordSql } from '../helpers/sql-log.js'

const teams = defineResource({
  name: 'team',
  table: 'teams',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['name'],
  hooks: {
    // A team's charter is made with it, in the create's transaction.
    async afterCreate ({ trx, row }) { await sql`insert into charters (team_id) values (${row.id})`.execute(trx) }
  }
})

const charters = defineResource({
  name: 'charter',
  table: 'charters',
  representation: Type.Object({ team_id: Type.Integer(), text: Type.Union([Type.String({ maxLength: 100 }), Type.Null()]) }),
  relations: { team: { belongsTo: 'team', key: 'team_id', under: 'one' } },
  generated: ['team_id'],
  writable: ['text'],
  auth: { read: 'authenticated', update: 'admin' },
  emptyPatch: 'unchanged',
  events: ['updated']
})

// Owned by its key: owner rules are checked from the path.
const preferences = defineResource({
  name: 'preference',
  table: 'preferences',
  representation: Type.Object({ user_id: Type.Integer(), theme: Type.String({ pattern: '^(light|dark)$' }) }),
  relations: { user: { belongsTo: 'user', key: 'user_id', under: 'one' } },
  generated: ['user_id'],
  owner: 'user_id',
  writable: ['theme'],
  auth: { read: 'owner', update: 'ownerOrAdmin' }
})

const migrations = {
  '0001_teams': {
    async up (db: Kysely<any>) {
      await sql`create table teams (id serial primary key, owner_id integer not null references users (id) on delete cascade, name text not null)`.execute(db)
      await sql`create table charters (team_id integer primary key references teams (id) on delete cascade, text text)`.execute(db)
      await sql`create table preferences (user_id integer primary key references users (id) on delete cascade, theme text not null default 'light')`.execute(db)
    }
  }
}

async function setUp (t: Parameters<typeof build>[0], db?: NonNullable<Parameters<typeof build>[1]>['db']) {
  const app = await build(t, { resources: [teams, charters, preferences], migrations, ...db === undefined ? {} : { db } })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  await sql`insert into preferences (user_id) select id from users`.execute(app.db)
  const admin = await adminToken(app)
  return { app, ann, bob, admin, asAnn: apiClient(app, ann.headers), asBob: apiClient(app, bob.headers), asAdmin: apiClient(app, admin) }
}

t.test('REST: read and change under the parent; no list, create or delete; 404 names the parent', async (t) => {
  const { app, asAnn, asAdmin } = await setUp(t)
  const team = body<{ id: number }>(await asAnn('POST', '/teams', { name: 'Engines' }))
  const url = `/teams/${team.id}/charter`
  const read = await asAnn('GET', url)
  t.same([read.statusCode, body(read)], [200, { team_id: team.id, text: null }], 'made with its parent')
  t.equal((await asAnn('GET', url, undefined, { 'if-none-match': read.headers.etag as string })).statusCode, 304)
  t.same(body(await asAnn('GET', `${url}?fields=text`)), { team_id: team.id, text: null }, 'the key always comes')

  const heard: unknown[] = []
  app.tandemEvents.emitter.on('charterUpdated', (message, done) => { heard.push(message.payload); done() })
  t.same([(await asAnn('PATCH', url, { text: 'x' })).statusCode], [403], 'the update rule')
  const patched = await asAdmin('PATCH', url, { text: 'Build engines' })
  t.same([patched.statusCode, body(patched)], [200, { team_id: team.id, text: 'Build engines' }])
  t.same(body(await asAdmin('PUT', url, {})), { team_id: team.id, text: null }, 'a PUT sets what it leaves out to null')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(heard, [{ charter: { team_id: team.id, text: 'Build engines' } }, { charter: { team_id: team.id, text: null } }], 'its updated event, after each change')
  t.equal((await asAdmin('PATCH', url, { text: 'stale' }, { 'if-match': read.headers.etag as string })).statusCode, 200, 'the ETag of the row as it was then')
  t.equal((await asAdmin('PATCH', url, { text: 'lost' }, { 'if-match': read.headers.etag as string })).statusCode, 412)

  for (const [method, path] of [['GET', '/charters'], ['POST', '/charters'], ['GET', `/charters/${team.id}`], ['POST', url], ['DELETE', url]] as const) {
    t.equal((await asAdmin(method, path, method === 'POST' ? { text: 'x' } : undefined)).statusCode, 404, `${method} ${path}: not served`)
  }
  const missing = await asAdmin('PATCH', '/teams/999/charter', { text: 'x' })
  t.same([missing.statusCode, body(missing)], [404, { error: 'team not found' }])
  t.same(body(await asAnn('GET', '/teams/999/charter')), { error: 'team not found' })

  t.same(body(await asAnn('GET', `/teams/${team.id}?include=charter`)), { id: team.id, owner_id: (await app.db.selectFrom('users').select('id').where('name', '=', 'Ann').executeTakeFirstOrThrow()).id, name: 'Engines', charter: { team_id: team.id, text: 'stale' } }, 'the parent includes it')
  t.equal((await asAnn('DELETE', `/teams/${team.id}`)).statusCode, 204)
  t.equal((await asAnn('GET', url)).statusCode, 404, 'removed with its parent')
})

t.test('owned by its key: a caller who may not change it learns nothing of whether the parent exists (404 where the read rule hides it)', async (t) => {
  const { ann, bob, asAnn, asBob, asAdmin } = await setUp(t)
  t.same(body(await asAnn('PATCH', `/users/${ann.id}/preference`, { theme: 'dark' })), { user_id: ann.id, theme: 'dark' })
  // Regression: these were 403s while a read of the same row is a 404.
  const others = await asBob('PATCH', `/users/${ann.id}/preference`, { theme: 'light' })
  t.same([others.statusCode, body(others)], [404, { error: 'user not found' }], 'another\'s row, hidden by an owner read rule: as a read answers it')
  const missing = await asBob('PATCH', '/users/999/preference', { theme: 'light' })
  t.same([missing.statusCode, body(missing)], [others.statusCode, body(others)], 'before the row is looked for: the same as no such row')
  t.same(body(await asAdmin('PATCH', '/users/999/preference', { theme: 'light' })), { error: 'user not found' }, 'an administrator learns it is not there')
  t.equal((await asBob('GET', `/users/${ann.id}/preference`)).statusCode, 404, 'an owner read rule hides it')
  t.same(body(await asBob('GET', `/users/${bob.id}?include=preference`)), { id: bob.id, name: 'Bob', email: bob.email, created_at: body(await asBob('GET', `/users/${bob.id}`)).created_at, preference: { user_id: bob.id, theme: 'light' } })
  t.same(body(await asBob('GET', `/users/${ann.id}?include=preference&fields=name`)), { id: ann.id, name: 'Ann', preference: null }, 'included under its read rule')
})

t.test('GraphQL: the parent\'s field, the query and the update by the key; nothing else', async (t) => {
  const recorded = recordSql(await testDb())
  const { app, ann, bob, asAnn, admin } = await setUp(t, recorded.db)
  const team = body<{ id: number }>(await asAnn('POST', '/teams', { name: 'Engines' }))
  await asAnn('POST', '/teams', { name: 'Looms' })

  const sdl = resourceSdl([teams, charters, preferences])
  t.match(sdl, /\n {2}charter\(teamId: ID!\): Charter\n/)
  t.match(sdl, /\n {2}updateCharter\(teamId: ID!, input: UpdateCharterInput!\): Charter\n/)
  t.match(sdl, /extend type Team \{\n {2}"Its charter."\n {2}charter: Charter\n\}/)
  t.match(sdl, /extend type User \{\n {2}"Its preference."\n {2}preference: Preference\n\}/)
  t.match(sdl, /\n {2}charterUpdated: Charter!\n/)
  t.notMatch(sdl, /charters\(|chartersConnection|createCharter|deleteCharter|CreateCharterInput|CharterConnection/, 'no list, create or delete')

  const updated = await graphql(app, `mutation { updateCharter(teamId: "${team.id}", input: { text: "Build" }) { teamId text } }`, { headers: admin })
  t.same(updated.data, { updateCharter: { teamId: String(team.id), text: 'Build' } })
  t.same(errorCodes(await graphql(app, `mutation { updateCharter(teamId: "${team.id}", input: { text: "x" }) { text } }`, { headers: ann.headers })), ['FORBIDDEN'])
  t.match((await graphql(app, 'mutation { updateCharter(teamId: "999", input: { text: "x" }) { text } }', { headers: admin })).errors, [{ message: 'team not found' }])
  t.same((await graphql(app, `{ charter(teamId: "${team.id}") { text } missing: charter(teamId: "999") { text } }`, { headers: bob.headers })).data, { charter: { text: 'Build' }, missing: null })
  t.match((await graphql(app, `mutation { updatePreference(userId: "${ann.id}", input: { theme: "dark" }) { theme } }`, { headers: bob.headers })).errors, [{ message: 'user not found', extensions: { code: 'NOT_FOUND' } }], 'hidden by the read rule, as in REST')

  recorded.statements.length = 0
  const nested = await graphql<{ teams: unknown[], users: Array<{ preference: unknown }> }>(app, '{ teams { name charter { text } } users { preference { theme } } }', { headers: ann.headers })
  t.same(nested.data?.teams, [{ name: 'Engines', charter: { text: 'Build' } }, { name: 'Looms', charter: { text: null } }])
  t.same(nested.data?.users.map((user) => user.preference), [{ theme: 'light' }, null, null], 'the read rule: Ann sees her own')
  const ours = recorded.statements.filter((statement) => !/revoked_tokens|persisted_queries|login_failures/.test(statement))
  t.equal(ours.length, 2, `each root and its singular field in one statement, whose text is the answer: ${ours.join(' | ')}`)
})

t.test('mistaken singular declarations fail at start, naming the mistake', async (t) => {
  const declare = (extra: object) => () => defineResource({ ...charters.declaration, ...extra } as Parameters<typeof defineResource>[0])
  const one = (options: object) => ({ relations: { team: { belongsTo: 'team', key: 'team_id', under: 'one', ...options } } })
  t.throws(declare({ relations: {} }), /the representation needs an `id`/, 'without its relation, it is a resource like any other')
  t.throws(declare({ relations: { charter: { belongsTo: 'charter', key: 'team_id', under: 'one' } } }), /cannot be one under itself/)
  t.throws(declare(one({ under: true })), /relations\.team\.under must be one of also, only or one/)
  t.throws(declare(one({ key: 'text' })), /the key text must be a non-null integer/)
  t.throws(declare({ representation: Type.Object({ id: Type.Integer(), team_id: Type.Integer() }), generated: ['id', 'team_id'] }), /has no id/)
  t.throws(declare({ relations: { team: { belongsTo: 'team', key: 'team_id', under: 'one' }, again: { belongsTo: 'team', key: 'team_id', under: 'one' } } }), /only one relation may be under: 'one'/)
  t.throws(declare({ generated: [] }), /`team_id` must be generated/)
  t.throws(declare({ sort: ['text'] }), /sort does not apply/)
  t.throws(declare({ auth: { create: 'authenticated' } }), /auth.create does not apply/)
  t.throws(declare({ events: ['created'] }), /never created on its own/)
  t.throws(declare({ hooks: { afterDelete () {} } }), /hook afterDelete would never run/)
  t.throws(declare(one({ inverse: 'charters' })), /the relations of a resource one under its parent are belongsTo, without inverse/)
  t.throws(declare({ relations: { ...one({}).relations, owner: { belongsTo: 'user', key: 'team_id', under: 'also' } } }), /relation owner: a resource one under its parent is never listed under another/)
  t.throws(() => resourceSdl([defineResource({ ...charters.declaration, relations: { team: { belongsTo: 'nothing', key: 'team_id', under: 'one' } } } as Parameters<typeof defineResource>[0])]), /nothing/)
  const pointing = defineResource({ ...teams.declaration, relations: { charters: { hasMany: 'charter', key: 'team_id' } } } as Parameters<typeof defineResource>[0])
  t.throws(() => resourceSdl([pointing, charters]), /charter is singular: reach it through its parent team/)
})
