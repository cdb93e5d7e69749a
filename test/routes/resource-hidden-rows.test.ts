// Rows an owner read rule hides from a caller stay hidden from their writes too (issue 37, point 7):
// a writable foreign key may only name a row the caller may read (another's is the 422 of a missing
// one), and a change refused on another's row is answered as a read of it is (404, as for no such
// row; 403 with `othersRows: 'forbidden'`). Where the caller may read the row, a refusal stays 403.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, Type } from '../../index.js'
import { adminToken, apiClient, body, build, graphql, signedIn } from '../helpers/app.js'
import { serverUrl } from '../helpers/database.js'

// Folders are their owners' alone; vaults too, but another's vault is a 403 rather than hidden.
const folders = defineResource({
  name: 'folder',
  table: 'folders',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['name'],
  auth: { read: 'owner', create: 'authenticated', update: 'owner', delete: 'owner' },
  actions: {
    rename: {
      auth: 'owner',
      input: Type.Object({ name: Type.String({ minLength: 1 }) }),
      run: async ({ trx, row, input }) => (await sql<typeof row>`update folders set name = ${input.name as string} where id = ${row.id} returning *`.execute(trx)).rows[0] as typeof row
    },
    // A rule broader than the read rule: anyone signed in may call it, on the rows they may read.
    touch: { auth: 'authenticated', run: async ({ row }) => row },
    // One an administrator may call on any row, as its rule says.
    tidy: { auth: 'ownerOrAdmin', run: async ({ row }) => row }
  }
})

const vaults = defineResource({
  name: 'vault',
  table: 'vaults',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), name: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['name'],
  auth: { read: 'ownerOrAdmin', create: 'authenticated', update: 'owner', delete: 'owner' },
  othersRows: 'forbidden'
})

// Pages anyone signed in reads, filed in a folder or a vault, about a post (which every signed-in user reads).
const pages = defineResource({
  name: 'page',
  table: 'pages',
  representation: Type.Object({
    id: Type.Integer(),
    owner_id: Type.Integer(),
    folder_id: Type.Union([Type.Integer(), Type.Null()]),
    vault_id: Type.Union([Type.Integer(), Type.Null()]),
    post_id: Type.Union([Type.Integer(), Type.Null()]),
    text: Type.String({ minLength: 1 })
  }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['folder_id', 'vault_id', 'post_id', 'text'],
  relations: {
    folder: { belongsTo: 'folder', key: 'folder_id', inverse: 'pages' },
    vault: { belongsTo: 'vault', key: 'vault_id', inverse: 'pages' },
    post: { belongsTo: 'post', key: 'post_id' }
  },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' }
})

// Sheets anyone signed in reads, listed under their folder (`GET /folders/{id}/sheets`).
const sheets = defineResource({
  name: 'sheet',
  table: 'sheets',
  representation: Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), folder_id: Type.Integer(), text: Type.String({ minLength: 1 }) }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['folder_id', 'text'],
  relations: { folder: { belongsTo: 'folder', key: 'folder_id', under: 'also' } },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' }
})

const migrations = {
  '0001_pages': {
    async up (db: Kysely<any>) {
      await sql`create table folders (id serial primary key, owner_id integer not null references users (id) on delete cascade, name text not null)`.execute(db)
      await sql`create table vaults (id serial primary key, owner_id integer not null references users (id) on delete cascade, name text not null)`.execute(db)
      await sql`create table pages (
        id serial primary key,
        owner_id integer not null references users (id) on delete cascade,
        folder_id integer references folders (id) on delete cascade,
        vault_id integer references vaults (id) on delete cascade,
        post_id integer references posts (id) on delete cascade,
        text text not null)`.execute(db)
      await sql`create table sheets (id serial primary key, owner_id integer not null references users (id) on delete cascade, folder_id integer not null references folders (id) on delete cascade, text text not null)`.execute(db)
      await sql`create index sheets_folder_id on sheets (folder_id, id)`.execute(db)
    }
  }
}

type Row = { id: number }

async function setUp (t: Parameters<typeof build>[0]) {
  const app = await build(t, { resources: [folders, vaults, pages, sheets], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const admin = await adminToken(app)
  const asAnn = apiClient(app, ann.headers)
  const asBob = apiClient(app, bob.headers)
  const annsFolder = body<Row>(await asAnn('POST', '/folders', { name: 'Ann\'s' }))
  const bobsFolder = body<Row>(await asBob('POST', '/folders', { name: 'Bob\'s' }))
  const annsVault = body<Row>(await asAnn('POST', '/vaults', { name: 'Ann\'s' }))
  const annsPost = body<Row>(await asAnn('POST', '/posts', { title: 'Ann\'s post', content: 'c' }))
  // Ids no row has: the other tables' ids keep growing from test to test.
  const { rows: [max] } = await sql<{ folder: number, vault: number }>`select (select coalesce(max(id), 0) + 1000 from folders) as folder, (select coalesce(max(id), 0) + 1000 from vaults) as vault`.execute(app.db)
  return { app, ann, bob, admin, asAnn, asBob, asAdmin: apiClient(app, admin), annsFolder, bobsFolder, annsVault, annsPost, missing: max as { folder: number, vault: number } }
}

const pageCount = async (app: Awaited<ReturnType<typeof setUp>>['app']) => (await sql<{ n: number }>`select count(*)::int as n from pages`.execute(app.db)).rows[0]?.n

t.test('REST: a writable foreign key names only a row the caller may read; another\'s is a missing one\'s 422', async (t) => {
  const { app, asAnn, asBob, asAdmin, annsFolder, bobsFolder, annsVault, annsPost, missing } = await setUp(t)
  const others = await asBob('POST', '/pages', { folder_id: annsFolder.id, text: 'in Ann\'s folder' })
  t.same([others.statusCode, body(others)], [422, { error: 'folder_id refers to something that does not exist', field: 'folder_id' }], 'another\'s owner-only row')
  const none = await asBob('POST', '/pages', { folder_id: missing.folder, text: 'nowhere' })
  t.same([none.statusCode, body(none)], [others.statusCode, body(others)], 'the same as no such row')
  const vault = await asBob('POST', '/pages', { vault_id: annsVault.id, text: 'x' })
  t.same([vault.statusCode, body(vault)], [422, { error: 'vault_id refers to something that does not exist', field: 'vault_id' }], 'othersRows: forbidden does not tell either')
  t.equal(await pageCount(app), 0, 'nothing written')
  t.same(body<{ data: unknown[] }>(await asAnn('GET', `/folders/${annsFolder.id}/pages`)).data, [], 'Ann\'s folder lists nothing of Bob\'s')

  t.equal((await asBob('POST', '/pages', { folder_id: bobsFolder.id, text: 'mine' })).statusCode, 201, 'one\'s own row')
  t.equal((await asBob('POST', '/pages', { folder_id: null, text: 'loose' })).statusCode, 201, 'no row at all')
  t.equal((await asBob('POST', '/pages', { post_id: annsPost.id, text: 'on Ann\'s post' })).statusCode, 201, 'a target every signed-in user reads: as before')
  const byAdmin = await asAdmin('POST', '/pages', { vault_id: annsVault.id, text: 'filed by an administrator' })
  t.equal(byAdmin.statusCode, 201, 'an ownerOrAdmin read rule lets an administrator name it')
  const both = await asBob('POST', '/pages', { folder_id: bobsFolder.id, vault_id: annsVault.id, text: 'x' })
  t.same([both.statusCode, body(both).field], [422, 'vault_id'], 'of two keys, the one that names nothing readable')
  t.equal(await pageCount(app), 4)
})

t.test('REST: a change of the key is checked on PUT and PATCH; a key left as it was is not', async (t) => {
  const { app, ann, asBob, annsFolder, bobsFolder, missing } = await setUp(t)
  const page = body<Row>(await asBob('POST', '/pages', { folder_id: bobsFolder.id, text: 'mine' }))
  const patched = await asBob('PATCH', `/pages/${page.id}`, { folder_id: annsFolder.id })
  t.same([patched.statusCode, body(patched)], [422, { error: 'folder_id refers to something that does not exist', field: 'folder_id' }])
  const patchedNowhere = await asBob('PATCH', `/pages/${page.id}`, { folder_id: missing.folder })
  t.same([patchedNowhere.statusCode, body(patchedNowhere)], [patched.statusCode, body(patched)], 'the same as no such row')
  const replaced = await asBob('PUT', `/pages/${page.id}`, { folder_id: annsFolder.id, text: 'moved' })
  t.same([replaced.statusCode, body(replaced)], [patched.statusCode, body(patched)], 'PUT alike')
  t.match(body(await asBob('GET', `/pages/${page.id}`)), { folder_id: bobsFolder.id, text: 'mine' }, 'unchanged')

  // Bob's folder given to Ann: the page filed there before stays filed, and may be edited.
  await sql`update folders set owner_id = ${ann.id} where id = ${bobsFolder.id}`.execute(app.db)
  t.equal((await asBob('PATCH', `/pages/${page.id}`, { text: 'edited' })).statusCode, 200)
  t.equal((await asBob('PUT', `/pages/${page.id}`, { folder_id: bobsFolder.id, text: 'kept' })).statusCode, 200, 'the key it had')
  t.equal((await asBob('PATCH', `/pages/${page.id}`, { folder_id: null })).statusCode, 200, 'taken out')
  t.equal((await asBob('PATCH', `/pages/${page.id}`, { folder_id: bobsFolder.id })).statusCode, 422, 'but not put back')
})

t.test('GraphQL: the same 422 for another\'s row as for a missing one, field as REST names it', async (t) => {
  const { app, bob, annsFolder, bobsFolder, annsPost, missing } = await setUp(t)
  const create = async (folder: number) => await graphql(app, `mutation { createPage(input: { folderId: "${folder}", text: "x" }) { id folderId } }`, { headers: bob.headers })
  const others = await create(annsFolder.id)
  t.same(others.errors?.map(({ message, extensions }) => ({ message, extensions })), [{ message: 'folder_id refers to something that does not exist', extensions: { code: 'BAD_USER_INPUT', field: 'folder_id' } }])
  const none = await create(missing.folder)
  t.same(none.errors?.map(({ message, extensions }) => ({ message, extensions })), others.errors?.map(({ message, extensions }) => ({ message, extensions })), 'the same as no such row')
  t.equal(await pageCount(app), 0)

  const made = await create(bobsFolder.id)
  t.same(made.data, { createPage: { id: made.data?.createPage.id, folderId: String(bobsFolder.id) } })
  const id = String(made.data?.createPage.id)
  const update = async (folder: number) => await graphql(app, `mutation { updatePage(id: "${id}", input: { folderId: "${folder}" }) { folderId } }`, { headers: bob.headers })
  const moved = await update(annsFolder.id)
  t.match(moved.errors, [{ message: 'folder_id refers to something that does not exist', extensions: { code: 'BAD_USER_INPUT', field: 'folder_id' } }])
  t.same((await update(missing.folder)).errors, moved.errors, 'the same as no such row')
  t.same((await graphql(app, `mutation { updatePage(id: "${id}", input: { postId: "${annsPost.id}" }) { postId } }`, { headers: bob.headers })).data, { updatePage: { postId: String(annsPost.id) } }, 'a target every signed-in user reads: as before')
})

t.test('REST: a change of another\'s row hidden by the read rule is a 404, as for no such row', async (t) => {
  const { app, asAnn, asBob, asAdmin, annsFolder, annsVault, annsPost, missing } = await setUp(t)
  const same = async (label: string, path: string, method: 'PUT' | 'PATCH' | 'DELETE' | 'POST', payload?: object) => {
    const others = await asBob(method, path.replace('ID', String(annsFolder.id)), payload)
    const none = await asBob(method, path.replace('ID', String(missing.folder)), payload)
    t.same([others.statusCode, body(others)], [404, { error: 'folder not found' }], `${label}: another's row`)
    t.same([none.statusCode, body(none)], [404, { error: 'folder not found' }], `${label}: no such row`)
  }
  await same('PUT', '/folders/ID', 'PUT', { name: 'taken' })
  await same('PATCH', '/folders/ID', 'PATCH', { name: 'taken' })
  await same('an action', '/folders/ID/rename', 'POST', { name: 'taken' })
  await same('DELETE', '/folders/ID', 'DELETE')
  t.match(body(await asAnn('GET', `/folders/${annsFolder.id}`)), { name: 'Ann\'s' }, 'untouched')

  // othersRows: 'forbidden': a 403, as a read of it is; no such row stays a 404.
  const vault = await asBob('PATCH', `/vaults/${annsVault.id}`, { name: 'taken' })
  t.same([vault.statusCode, body(vault)], [403, { error: 'only its owner may update this vault' }])
  t.equal((await asBob('DELETE', `/vaults/${annsVault.id}`)).statusCode, 403)
  t.equal((await asBob('PATCH', `/vaults/${missing.vault}`, { name: 'taken' })).statusCode, 404)
  // Read but not changed: an administrator reads every vault (ownerOrAdmin), and only owners change them.
  t.same([(await asAdmin('PATCH', `/vaults/${annsVault.id}`, { name: 'taken' })).statusCode], [403], 'readable, not changeable: 403')
  // The built-in posts: every signed-in user reads them, their authors change them.
  t.equal((await asBob('PATCH', `/posts/${annsPost.id}`, { title: 'taken' })).statusCode, 403, 'readable, not changeable: 403')
  t.same((await sql<{ name: string }>`select name from vaults`.execute(app.db)).rows, [{ name: 'Ann\'s' }])
})

t.test('GraphQL: the same answers as for no such row', async (t) => {
  const { app, bob, admin, annsFolder, annsVault, missing } = await setUp(t)
  const ask = async (query: string, headers = bob.headers) => {
    const res = await graphql(app, query, { headers })
    return { data: res.data, errors: res.errors?.map(({ message, extensions }) => ({ message, extensions })) }
  }
  for (const [label, query] of [
    ['update', 'mutation { updateFolder(id: "ID", input: { name: "taken" }) { name } }'],
    ['an action', 'mutation { renameFolder(id: "ID", input: { name: "taken" }) { name } }'],
    ['delete', 'mutation { deleteFolder(id: "ID") }']
  ] as const) {
    const others = await ask(query.replace('ID', String(annsFolder.id)))
    t.same(others, await ask(query.replace('ID', String(missing.folder))), `${label}: another's row as no such row`)
    t.notOk(JSON.stringify(others).includes('FORBIDDEN'), `${label}: not a refusal`)
  }
  t.same((await ask(`mutation { deleteFolder(id: "${annsFolder.id}") }`)).data, { deleteFolder: false })
  t.match((await ask(`mutation { updateFolder(id: "${annsFolder.id}", input: { name: "taken" }) { name } }`)).errors, [{ message: 'folder not found', extensions: { code: 'NOT_FOUND' } }])
  t.match((await ask(`mutation { updateVault(id: "${annsVault.id}", input: { name: "taken" }) { name } }`)).errors, [{ extensions: { code: 'FORBIDDEN' } }], 'othersRows: forbidden')
  t.match((await ask(`mutation { deleteVault(id: "${annsVault.id}") }`)).errors, [{ extensions: { code: 'FORBIDDEN' } }])
  t.match((await ask(`mutation { updateVault(id: "${annsVault.id}", input: { name: "taken" }) { name } }`, admin)).errors, [{ extensions: { code: 'FORBIDDEN' } }], 'readable, not changeable')
  t.same((await sql<{ name: string }>`select name from folders where id = ${annsFolder.id}`.execute(app.db)).rows, [{ name: 'Ann\'s' }])
})

t.test('a change of the target\'s owner while a page is filed there: the write waits, then sees it', { skip: serverUrl() === undefined ? 'needs a real PostgreSQL (set DATABASE_URL): PGlite runs one transaction at a time' : false }, async (t) => {
  const { app, ann, asBob, bobsFolder } = await setUp(t)
  // Bob's folder is being given to Ann, in a transaction not yet committed.
  const giving = app.db.transaction().execute(async (trx) => {
    await sql`update folders set owner_id = ${ann.id} where id = ${bobsFolder.id}`.execute(trx)
    const filing = asBob('POST', '/pages', { folder_id: bobsFolder.id, text: 'filed meanwhile' })
    const state = { answered: false }
    filing.then(() => { state.answered = true }, () => { state.answered = true })
    // The insert waits for the folder's row (no timing: the server says when a backend waits on a
    // lock). An insert that did not wait has answered already: the assertions below say how.
    for (;;) {
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`.execute(app.db)
      if ((rows[0]?.n ?? 0) > 0 || state.answered) break
      await new Promise((resolve) => setImmediate(resolve))
    }
    // Handed back in an object: returned as it is, the transaction would wait for it before committing.
    return { filing }
  })
  const filed = await (await giving).filing
  t.same([filed.statusCode, body(filed).field], [422, 'folder_id'], 'the owner committed first is the one checked')
  t.equal(await pageCount(app), 0)
})

t.test('regression: the rows listed under a row its read rule hides are a 404, as under no such row, whether or not there are any', async (t) => {
  const { asAnn, asBob, annsFolder, bobsFolder, missing } = await setUp(t)
  const sheet = await asAnn('POST', '/sheets', { folder_id: annsFolder.id, text: 'Ann\'s sheet' })
  t.equal(sheet.statusCode, 201)
  const mine = await asAnn('GET', `/folders/${annsFolder.id}/sheets`)
  t.strictSame([mine.statusCode, body<{ data: Array<{ text: string }> }>(mine).data.map(({ text }) => text)], [200, ['Ann\'s sheet']], 'its owner lists them')
  const none = await asBob('GET', `/folders/${missing.folder}/sheets`)
  t.equal(none.statusCode, 404, 'no such folder')
  const others = await asBob('GET', `/folders/${annsFolder.id}/sheets`)
  t.strictSame([others.statusCode, body(others)], [404, body(none)], 'another\'s folder with a sheet: the same 404, no sheet')
  const empty = body<Row>(await asAnn('POST', '/folders', { name: 'empty' }))
  const othersEmpty = await asBob('GET', `/folders/${empty.id}/sheets`)
  t.strictSame([othersEmpty.statusCode, body(othersEmpty)], [404, body(none)], 'another\'s empty folder: the same 404')
  t.equal((await asBob('GET', `/folders/${bobsFolder.id}/sheets`)).statusCode, 200, 'one\'s own empty folder lists nothing')
  // A create names the folder by its key, checked as every writable key is: another's is a key naming nothing.
  t.equal((await asBob('POST', '/sheets', { folder_id: annsFolder.id, text: 'into Ann\'s' })).statusCode, 422, 'a create into another\'s folder')
})

t.test('regression: a change whose rule is broader than the read rule reaches only the rows the caller may read', async (t) => {
  const { app, bob, asAnn, asBob, asAdmin, annsFolder, bobsFolder, missing } = await setUp(t)
  const own = await asBob('POST', `/folders/${bobsFolder.id}/touch`)
  t.strictSame([own.statusCode, body<Row>(own).id], [200, bobsFolder.id], 'one\'s own row')
  const none = await asBob('POST', `/folders/${missing.folder}/touch`)
  t.equal(none.statusCode, 404, 'no such row')
  const others = await asBob('POST', `/folders/${annsFolder.id}/touch`)
  t.strictSame([others.statusCode, body(others)], [404, body(none)], 'another\'s row: the same 404, never the row')
  const asked = await graphql(app, `mutation { touchFolder(id: ${annsFolder.id}) { name } }`, { headers: bob.headers })
  t.strictSame([asked.data, asked.errors?.map((error) => error.extensions?.code)], [{ touchFolder: null }, ['NOT_FOUND']], 'GraphQL: the same, never the row')
  t.equal((await asAnn('POST', `/folders/${annsFolder.id}/touch`)).statusCode, 200, 'its owner may')
  const tidied = await asAdmin('POST', `/folders/${annsFolder.id}/tidy`)
  t.strictSame([tidied.statusCode, body<Row>(tidied).id], [200, annsFolder.id], 'an administrator an ownerOrAdmin rule admits reaches another\'s row')
  t.equal((await asBob('POST', `/folders/${annsFolder.id}/tidy`)).statusCode, 404, 'as a user who may not, it is hidden')
})
