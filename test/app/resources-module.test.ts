// RESOURCES_MODULE: the server serves a host's resources from a module, with no host application.
import t from 'tap'
import { build } from '../helpers/app.js'
import { migratedDataDir } from '../helpers/database.js'
import { spawnServer, startServer } from '../helpers/processes.js'

t.test('a module\'s declarations and migrations are served in both styles', async (t) => {
  const server = await startServer(t, { RESOURCES_MODULE: 'test/app/fixtures/notes.mjs' })
  const list = await fetch(`${server.url}/api/v1/notes`)
  t.equal(list.status, 200)
  t.match(await list.json(), { data: [{ id: 1, text: 'first note' }] }, 'the module\'s migration made and filled the table')
  const graphql = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: '{ notes(limit: 5) { text } }' }) })
  t.same(await graphql.json(), { data: { notes: [{ text: 'first note' }] } })
  const created = await fetch(`${server.url}/api/v1/notes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'second' }) })
  t.equal(created.status, 401, 'its rules hold: create needs a caller')
})

for (const [module, message] of [
  ['test/app/fixtures/missing.mjs', /RESOURCES_MODULE test\/app\/fixtures\/missing\.mjs could not be loaded/],
  ['test/app/fixtures/no-resources.mjs', /must export an array `resources`/],
  ['test/app/fixtures/bad-declaration.mjs', /bad-declaration\.mjs: defineResource\("note"\): writable names title/],
  ['test/app/fixtures/clashing.mjs', /defineResource\("memo"\): the path \/notes is taken by another declared resource/],
  ['test/app/fixtures/built-in-plural.mjs', /defineResource\("member"\): the path \/users is taken by a built-in resource/]
] as const) {
  t.test(`a module that cannot be served stops the start with one line: ${module}`, async (t) => {
    // The module is loaded once the database is open: a migrated one spares each start an initdb.
    const { code, stderr } = await spawnServer(t, { JWT_SECRET: 'a-secret-of-sixteen-chars', RESOURCES_MODULE: module, PORT: '0', DATA_DIR: await migratedDataDir(t) }).exited
    t.equal(code, 1)
    t.match(stderr, message)
    t.equal(stderr.trim().split('\n').length, 1, 'one line')
  })
}

t.test('tandem takes resourcesModule as an option too, and refuses it beside resources', async (t) => {
  const app = await build(t, { resourcesModule: 'test/app/fixtures/notes.mjs' })
  t.match((await app.inject({ url: '/api/v1/notes' })).json(), { data: [{ text: 'first note' }] })
  await t.rejects(build(t, { resourcesModule: 'test/app/fixtures/notes.mjs', resources: [] }), /resources and migrations, or resourcesModule, not both/)
})
