// The worked example of CONTRACT §9: a host's own resource, declared once, with the conventions of
// the built-in ones. It is imported as a host would ('tandem-api'), from the sources here.
import { readFileSync } from 'node:fs'
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { conflict, defineResource, resourceSdl, Type, type Static } from '../../index.js'
import { adminToken, apiClient, body, build, errorCodes, graphql, signedIn, testDb } from '../helpers/app.js'
import '../helpers/source-package.js'
import { serverUrl } from '../helpers/database.js'
import { recordSql } from '../helpers/sql-log.js'
import { connect, listening, subscribe } from '../helpers/subscriptions.js'

const { labels, migrations, LABELS_PER_OWNER } = await import('../../examples/labels.js')

type Label = { id: number, owner_id: number, name: string, color: string | null, created_at: string, archived_at: string | null }
type Page = { data: Label[], pagination?: { hasMore: boolean, nextCursor: string | null, total?: number } }

async function setUp (t: Parameters<typeof build>[0]) {
  const app = await build(t, { resources: [labels], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  return { app, ann, bob, asAnn: apiClient(app, ann.headers), asBob: apiClient(app, bob.headers) }
}

t.test('create, read, list, change and delete a declared resource', async (t) => {
  const { app, ann, asAnn } = await setUp(t)
  const created = await asAnn('POST', '/labels', { name: 'urgent', color: '#ff0000' })
  t.equal(created.statusCode, 201)
  const label = body<Label>(created)
  t.match(label, { id: Number, owner_id: ann.id, name: 'urgent', color: '#ff0000', created_at: /^\d{4}-\d\d-\d\dT.*Z$/ }, 'the owner is the caller')
  t.equal(created.headers.location, `/api/v1/labels/${label.id}`)
  t.match(created.headers.etag, /^"/)

  const read = await asAnn('GET', `/labels/${label.id}`)
  t.equal(read.statusCode, 200)
  t.same(body(read), label)
  t.equal(read.headers.etag, created.headers.etag, 'a read has the ETag of the write that made it')
  t.equal((await asAnn('GET', `/labels/${label.id}`, undefined, { 'if-none-match': String(read.headers.etag) })).statusCode, 304)
  t.same(body(await asAnn('GET', `/labels/${label.id}?fields=name`)), { id: label.id, name: 'urgent' })

  const nullable = await asAnn('POST', '/labels', { name: 'plain' })
  t.equal(nullable.statusCode, 201)
  t.equal(body<Label>(nullable).color, null, 'a nullable field may be left out')

  const patched = await asAnn('PATCH', `/labels/${label.id}`, { color: '#00ff00' })
  t.equal(patched.statusCode, 200)
  t.match(body(patched), { name: 'urgent', color: '#00ff00' })
  const replaced = await asAnn('PUT', `/labels/${label.id}`, { name: 'later' })
  t.same(body(replaced), { ...label, name: 'later', color: null }, 'PUT replaces: a field left out is null')

  t.equal((await asAnn('DELETE', `/labels/${label.id}`)).statusCode, 204)
  t.equal((await asAnn('GET', `/labels/${label.id}`)).statusCode, 404)
  t.same(body(await asAnn('DELETE', `/labels/${label.id}`)), { error: 'label not found' })
  const rows = await sql<{ name: string }>`select name from labels order by id`.execute(app.db)
  t.same(rows.rows, [{ name: 'plain' }])
})

t.test('lists: keyset pages with signed cursors, sort, filters, q, fields and totals', async (t) => {
  const { ann, bob, asAnn, asBob } = await setUp(t)
  for (const name of ['delta', 'alpha', 'charlie', 'bravo', 'echo']) t.equal((await asAnn('POST', '/labels', { name })).statusCode, 201)
  t.equal((await asBob('POST', '/labels', { name: 'bobs' })).statusCode, 201)

  const first = await asAnn('GET', '/labels?limit=2&sort=name&total=true')
  const page = body<Page>(first)
  t.same(page.data.map((l) => l.name), ['alpha', 'bobs'])
  t.match(page.pagination, { hasMore: true, nextCursor: String, total: 6 })
  t.match(first.headers.link, /rel="next"/)
  const second = body<Page>(await asAnn('GET', `/labels?limit=2&sort=name&cursor=${encodeURIComponent(page.pagination?.nextCursor ?? '')}`))
  t.same(second.data.map((l) => l.name), ['bravo', 'charlie'])
  const tampered = await asAnn('GET', `/labels?limit=2&sort=name&owner_id=${ann.id}&cursor=${encodeURIComponent(page.pagination?.nextCursor ?? '')}`)
  t.equal(tampered.statusCode, 400, 'a cursor is refused under other filters')

  t.same(body<Page>(await asAnn('GET', '/labels?sort=-name&limit=2')).data.map((l) => l.name), ['echo', 'delta'])
  t.same(body<Page>(await asAnn('GET', `/labels?owner_id=${bob.id}`)).data.map((l) => l.name), ['bobs'])
  t.same(body<Page>(await asAnn('GET', '/labels?name=charlie')).data.map((l) => l.name), ['charlie'])
  t.same(body<Page>(await asAnn('GET', '/labels?q=harl')).data.map((l) => l.name), ['charlie'], 'q matches parts of words')
  const whole = body<Page>(await asAnn('GET', '/labels?limit=1')).data
  t.same(body<Page>(await asAnn('GET', '/labels?fields=name&limit=1')).data, whole.map(({ id, name }) => ({ id, name })))
  t.same(body<Page>(await asAnn('GET', '/labels?page=2&limit=2')).data.length, 2, 'page mode')
  for (const bad of ['sort=color', 'fields=secret', 'limit=101', 'q=ab', 'include=colours', 'colour=red']) {
    const res = await asAnn('GET', `/labels?${bad}`)
    t.equal(res.statusCode, 400, bad)
    t.match(body(res), { error: String, field: bad.split('=')[0] === 'colour' ? String : bad.split('=')[0] }, bad)
  }
})

t.test('relations: include=owner,posts and the label\'s posts as a list', async (t) => {
  const { app, ann, bob, asAnn } = await setUp(t)
  const label = body<Label>(await asAnn('POST', '/labels', { name: 'reading' }))
  const other = body<Label>(await asAnn('POST', '/labels', { name: 'unused' }))
  const posts: Array<{ id: number }> = []
  for (const title of ['one', 'two', 'three']) posts.push(body<{ id: number }>(await apiClient(app, bob.headers)('POST', '/posts', { title, content: 'c' })))
  await sql`insert into post_labels (label_id, post_id) values ${sql.join(posts.map((post) => sql`(${label.id}, ${post.id})`))}`.execute(app.db)

  const item = body<Record<string, any>>(await asAnn('GET', `/labels/${label.id}?include=owner,posts`))
  t.match(item.owner, { id: ann.id, name: 'Ann', email: ann.email })
  t.same(item.posts.map((post: { title: string }) => post.title), ['one', 'two', 'three'])
  const narrowed = body<Record<string, any>>(await asAnn('GET', `/labels/${label.id}?fields=name&include=owner`))
  t.same(Object.keys(narrowed).sort(), ['id', 'name', 'owner'], 'the key an included relation needs is read, not shown')
  const list = body<{ data: Array<Record<string, any>> }>(await asAnn('GET', '/labels?include=posts&sort=name'))
  t.same(list.data.map((l) => [l.name, l.posts.length]), [['reading', 3], ['unused', 0]])
  t.match(body(await asAnn('GET', '/labels?include=colours')), { error: /^include names no relation that can be included; includable: /, field: 'include' })
  // Regression: the 400s of an unknown include, field or sort quoted the value sent.
  for (const param of ['include', 'fields', 'sort']) {
    const refused = await asAnn('GET', `/labels?${param}=zqxj${param}`)
    t.strictSame([refused.statusCode, body(refused).field], [400, param], `an unknown ${param}`)
    t.notMatch(refused.body, /zqxj/, `${param}: the value sent is not echoed`)
  }

  const first = await asAnn('GET', `/labels/${label.id}/posts?limit=2`)
  t.equal(first.statusCode, 200)
  const page = body<{ data: Array<{ title: string }>, pagination: { nextCursor: string } }>(first)
  t.same(page.data.map((post) => post.title), ['one', 'two'])
  const rest = body<{ data: Array<{ title: string }> }>(await asAnn('GET', `/labels/${label.id}/posts?limit=2&cursor=${encodeURIComponent(page.pagination.nextCursor)}`))
  t.same(rest.data.map((post) => post.title), ['three'])
  t.same(body<{ data: unknown[] }>(await asAnn('GET', `/labels/${other.id}/posts`)).data, [])
  t.same(body<{ data: Array<{ title: string }> }>(await asAnn('GET', `/labels/${label.id}/posts?q=thr`)).data.map((post) => post.title), ['three'])
  t.equal((await asAnn('GET', '/labels/999999/posts')).statusCode, 404)
  t.equal((await apiClient(app)('GET', `/labels/${label.id}/posts`)).statusCode, 401)
  const doc = body<{ paths: Record<string, unknown> }>(await app.inject({ method: 'GET', url: '/openapi.json' }))
  t.ok(doc.paths['/api/v1/labels/{id}/posts'], 'in the OpenAPI document')
})

t.test('bodies are checked by the declaration, and constraints answer in the error model', async (t) => {
  const { asAnn } = await setUp(t)
  for (const [what, payload] of [
    ['an unknown field', { name: 'x', shade: 'dark' }],
    ['no name', { color: '#000000' }],
    ['a bad color', { name: 'x', color: 'red' }],
    ['a generated field', { id: 7, name: 'x' }],
    ['the owner', { owner_id: 1, name: 'x' }],
    ['an empty name', { name: '' }]
  ] as const) {
    const res = await asAnn('POST', '/labels', payload)
    t.equal(res.statusCode, 400, what)
    t.match(body(res), { error: String }, what)
  }
  const twice = await asAnn('POST', '/labels', { name: 'twice' })
  t.equal(twice.statusCode, 201)
  const duplicate = await asAnn('POST', '/labels', { name: 'twice' })
  t.equal(duplicate.statusCode, 409, 'the host table\'s unique constraint')
  t.same(body(duplicate), { error: 'name already exists', field: 'name' }, 'unique (owner_id, name) names the name, which the client set')
  const empty = await asAnn('PATCH', `/labels/${body<Label>(twice).id}`, {})
  t.same([empty.statusCode, body(empty)], [200, body(twice)], 'an empty PATCH answers the label as it is (emptyPatch: \'refused\' would make it a 400)')
})

t.test('access rules: authenticated reads, owner updates, owner or admin deletes', async (t) => {
  const { app, asAnn, asBob } = await setUp(t)
  const label = body<Label>(await asAnn('POST', '/labels', { name: 'mine' }))
  const anonymous = apiClient(app)
  t.equal((await anonymous('GET', '/labels')).statusCode, 401)
  t.equal((await anonymous('POST', '/labels', { name: 'x' })).statusCode, 401)
  t.equal((await asBob('GET', `/labels/${label.id}`)).statusCode, 200, 'any signed-in user reads')
  const refused = await asBob('PATCH', `/labels/${label.id}`, { name: 'theirs' })
  t.equal(refused.statusCode, 403)
  t.same(body(refused), { error: 'only its owner may update this label' })
  t.equal((await asBob('DELETE', `/labels/${label.id}`)).statusCode, 403)
  const admin = apiClient(app, await adminToken(app))
  t.equal((await admin('PATCH', `/labels/${label.id}`, { name: 'admins' })).statusCode, 403, 'update is the owner\'s alone')
  t.equal((await admin('DELETE', `/labels/${label.id}`)).statusCode, 204, 'delete: the owner or an administrator')
  t.equal((await asBob('PATCH', '/labels/999999', { name: 'x' })).statusCode, 404)
})

t.test('If-Match and Idempotency-Key work as on the built-in resources', async (t) => {
  const { app, asAnn } = await setUp(t)
  const created = await asAnn('POST', '/labels', { name: 'v1' }, { 'idempotency-key': 'label-1' })
  const again = await asAnn('POST', '/labels', { name: 'v1' }, { 'idempotency-key': 'label-1' })
  t.equal(again.statusCode, 201)
  t.equal(again.body, created.body, 'the same answer, replayed')
  t.equal((await asAnn('POST', '/labels', { name: 'other' }, { 'idempotency-key': 'label-1' })).statusCode, 422)
  const count = await sql<{ n: number }>`select count(*)::int as n from labels`.execute(app.db)
  t.equal(count.rows[0]?.n, 1, 'one row for the repeated request')

  const label = body<Label>(created)
  const stale = await asAnn('PATCH', `/labels/${label.id}`, { name: 'v2' }, { 'if-match': '"stale"' })
  t.equal(stale.statusCode, 412)
  const current = await asAnn('PATCH', `/labels/${label.id}`, { name: 'v2' }, { 'if-match': String(created.headers.etag) })
  t.equal(current.statusCode, 200)
  t.equal((await asAnn('DELETE', `/labels/${label.id}`, undefined, { 'if-match': String(created.headers.etag) })).statusCode, 412, 'the old ETag no longer matches')
})

t.test('the declared routes are in the OpenAPI document, and the host\'s migrations in a table of their own', async (t) => {
  const { app } = await setUp(t)
  const doc = body<{ paths: Record<string, Record<string, unknown>> }>(await app.inject({ method: 'GET', url: '/openapi.json' }))
  t.ok(doc.paths['/api/v1/labels']?.get && doc.paths['/api/v1/labels']?.post)
  t.ok(doc.paths['/api/v1/labels/{id}']?.patch && doc.paths['/api/v1/labels/{id}']?.delete)
  const host = await sql<{ name: string }>`select name from host_migrations`.execute(app.db)
  t.same(host.rows.map((r) => r.name), ['0001_labels'])
  const own = await sql<{ name: string }>`select name from kysely_migration where name like '%labels%'`.execute(app.db)
  t.same(own.rows, [])
  t.equal((await app.inject({ method: 'GET', url: '/api/labels', headers: { accept: 'application/json' } })).statusCode, 401, 'the unversioned path too')
})

t.test('GraphQL: the same resource, rules and cursors, with camelCase names', async (t) => {
  const { app, ann, bob, asAnn } = await setUp(t)
  const made = await graphql(app, 'mutation { createLabel(input: {name: "urgent", color: "#ff0000"}) { id ownerId name color createdAt } }', { headers: ann.headers })
  t.same(made.errors, undefined)
  const label = made.data?.createLabel
  t.match(label, { id: String, ownerId: String(ann.id), name: 'urgent', color: '#ff0000', createdAt: /Z$/ })
  const viaRest = body<Label>(await asAnn('GET', `/labels/${String(label.id)}`))
  t.equal(viaRest.name, 'urgent', 'written in one style, read in the other')
  for (const name of ['bravo', 'charlie']) await graphql(app, `mutation { createLabel(input: {name: "${name}"}) { id } }`, { headers: ann.headers })

  t.same((await graphql(app, `{ label(id: "${String(label.id)}") { name } }`, { headers: bob.headers })).data, { label: { name: 'urgent' } })
  t.same((await graphql(app, '{ label(id: "999999") { name } }', { headers: bob.headers })).data, { label: null })
  const list = await graphql(app, `{ labels(limit: 2, ownerId: "${ann.id}") { name } }`, { headers: bob.headers })
  t.same(list.data, { labels: [{ name: 'urgent' }, { name: 'bravo' }] })
  t.same((await graphql(app, '{ labels(q: "harl") { name } }', { headers: bob.headers })).data, { labels: [{ name: 'charlie' }] })
  t.same(errorCodes(await graphql(app, '{ labels(q: "ha") { name } }', { headers: bob.headers })), ['BAD_USER_INPUT'], 'q needs 3 characters here too')

  const first = await graphql(app, '{ labelsConnection(first: 2) { edges { cursor node { name } } pageInfo { hasNextPage endCursor } } }', { headers: bob.headers })
  t.match(first.data?.labelsConnection, { edges: [{ node: { name: 'urgent' } }, { node: { name: 'bravo' } }], pageInfo: { hasNextPage: true } })
  const after = String(first.data?.labelsConnection.pageInfo.endCursor)
  const next = await graphql(app, `{ labelsConnection(first: 2, after: "${after}") { edges { node { name } } pageInfo { hasNextPage } } }`, { headers: bob.headers })
  t.same(next.data?.labelsConnection, { edges: [{ node: { name: 'charlie' } }], pageInfo: { hasNextPage: false } })
  const rest = body<Page>(await asAnn('GET', `/labels?limit=2&cursor=${encodeURIComponent(after)}`))
  t.same(rest.data.map((l) => l.name), ['charlie'], 'a connection cursor continues the REST list too')

  t.same(errorCodes(await graphql(app, '{ labels { name } }')), ['UNAUTHENTICATED'])
  const theirs = await graphql(app, `mutation { updateLabel(id: "${String(label.id)}", input: {name: "theirs"}) { name } }`, { headers: bob.headers })
  t.same(errorCodes(theirs), ['FORBIDDEN'], 'the owner rule of REST')
  t.same(errorCodes(await graphql(app, 'mutation { createLabel(input: {name: "x", color: "red"}) { id } }', { headers: ann.headers })), ['BAD_USER_INPUT'])
  const duplicate = await graphql(app, 'mutation { createLabel(input: {name: "urgent"}) { id } }', { headers: ann.headers })
  t.same(errorCodes(duplicate), ['CONFLICT'])
  const changed = await graphql(app, `mutation { updateLabel(id: "${String(label.id)}", input: {color: null}) { name color } }`, { headers: ann.headers })
  t.same(changed.data, { updateLabel: { name: 'urgent', color: null } })
  t.same((await graphql(app, `mutation { deleteLabel(id: "${String(label.id)}") }`, { headers: bob.headers })).errors?.[0]?.extensions?.code, 'FORBIDDEN')
  t.same((await graphql(app, `mutation { deleteLabel(id: "${String(label.id)}") }`, { headers: ann.headers })).data, { deleteLabel: true })
  t.same((await graphql(app, `mutation { deleteLabel(id: "${String(label.id)}") }`, { headers: ann.headers })).data, { deleteLabel: false })
})

t.test('GraphQL relations: owner and posts, and the built-in relations below them, all in one statement below the labels', async (t) => {
  const recorded = recordSql(await testDb())
  const app = await build(t, { db: recorded.db, resources: [labels], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const asAnn = apiClient(app, ann.headers)
  const asBob = apiClient(app, bob.headers)
  const posts: Array<{ id: number }> = []
  for (const title of ['one', 'two', 'three']) posts.push(body<{ id: number }>(await asBob('POST', '/posts', { title, content: 'c' })))
  const labelled: Label[] = []
  for (const name of ['reading', 'later', 'never']) labelled.push(body<Label>(await asAnn('POST', '/labels', { name })))
  await sql`insert into post_labels (label_id, post_id) values ${sql.join(posts.flatMap((post, at) => labelled.slice(0, 2).filter((_, l) => l <= at).map((label) => sql`(${label.id}, ${post.id})`)))}`.execute(app.db)

  recorded.statements.length = 0
  const res = await graphql(app, `{ labels(limit: 3) {
    name owner { name posts(limit: 2) { title } }
    posts(limit: 2) { title author { name } comments { text } }
  } }`, { headers: ann.headers })
  t.same(res.errors, undefined)
  t.same(res.data?.labels, [
    { name: 'reading', owner: { name: 'Ann', posts: [] }, posts: [{ title: 'one', author: { name: 'Bob' }, comments: [] }, { title: 'two', author: { name: 'Bob' }, comments: [] }] },
    { name: 'later', owner: { name: 'Ann', posts: [] }, posts: [{ title: 'two', author: { name: 'Bob' }, comments: [] }, { title: 'three', author: { name: 'Bob' }, comments: [] }] },
    { name: 'never', owner: { name: 'Ann', posts: [] }, posts: [] }
  ])
  const statements = recorded.statements.filter((statement) => !/revoked_tokens|persisted_queries|login_failures/.test(statement))
  t.equal(statements.length, 1, `the labels, their owners, posts and everything below them in one statement, whose text is the answer: ${statements.join(' | ')}`)

  const one = await graphql(app, `{ label(id: "${labelled[1]?.id ?? 0}") { posts { title } } labelsConnection(first: 1) { edges { node { name owner { email } } } } }`, { headers: ann.headers })
  t.same(one.data, { label: { posts: [{ title: 'two' }, { title: 'three' }] }, labelsConnection: { edges: [{ node: { name: 'reading', owner: { email: ann.email } } }] } })
  const made = await graphql(app, 'mutation { createLabel(input: {name: "fresh"}) { name owner { name } posts { title } } }', { headers: ann.headers })
  t.same(made.data, { createLabel: { name: 'fresh', owner: { name: 'Ann' }, posts: [] } })
  t.same(errorCodes(await graphql(app, '{ labels { posts(limit: 101) { title } } }', { headers: ann.headers })), ['BAD_USER_INPUT'])
  const aliases = await graphql(app, '{ labels(limit: 1) { a: posts(limit: 1) { title } b: posts(limit: 2) { title } } }', { headers: ann.headers })
  t.same(aliases.data, { labels: [{ a: [{ title: 'one' }], b: [{ title: 'one' }, { title: 'two' }] }] }, 'aliases of one relation with different limits are answered each with its own')
})

t.test('subscriptions: labelCreated, labelUpdated, labelDeleted after the write, filtered, from either style', async (t) => {
  const { app, url } = await listening(t, { resources: [labels], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const asAnn = apiClient(app, ann.headers)
  const client = connect(t, url, bob.headers)
  const anns = subscribe(client, 'subscription ($owner: ID) { labelCreated(ownerId: $owner) { name ownerId createdAt } }', { owner: String(ann.id) })
  const updated = subscribe(client, 'subscription { labelUpdated { name color } }')
  const deleted = subscribe(client, 'subscription { labelDeleted { id name } }')
  // Subscribing is asynchronous on the server: write until each subscription has heard a write.
  for (let n = 0; anns.received.length === 0; n++) {
    await asAnn('POST', '/labels', { name: `probe ${n}` })
    await new Promise((resolve) => setTimeout(resolve, 50))
    if (n > 100) throw new Error('the subscription never became live')
  }
  const probe = body<Label>(await asAnn('POST', '/labels', { name: 'probe last' }))
  for (let n = 0; updated.received.length === 0 || deleted.received.length === 0; n++) {
    await asAnn('PATCH', `/labels/${probe.id}`, { color: `#00000${n % 10}` })
    if (deleted.received.length === 0) await asAnn('DELETE', `/labels/${(await asAnn('POST', '/labels', { name: `gone ${n}` }).then((res) => body<Label>(res))).id}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
    if (n > 100) throw new Error('the subscriptions never became live')
  }

  await apiClient(app, bob.headers)('POST', '/labels', { name: 'by bob' })
  await graphql(app, 'mutation { createLabel(input: {name: "by GraphQL"}) { id } }', { headers: ann.headers })
  const heard = await anns.next((v) => v.labelCreated.name === 'by GraphQL')
  t.match(heard, { labelCreated: { name: 'by GraphQL', ownerId: String(ann.id), createdAt: /Z$/ } })
  t.notOk(anns.received.some((v: any) => v.labelCreated.name === 'by bob'), 'the ownerId filter holds')

  const label = body<Label>(await asAnn('POST', '/labels', { name: 'watched' }))
  await asAnn('PATCH', `/labels/${label.id}`, { color: '#123456' })
  t.same(await updated.next((v) => v.labelUpdated.name === 'watched'), { labelUpdated: { name: 'watched', color: '#123456' } })
  const archived = body<Label>(await asAnn('POST', '/labels', { name: 'archived', color: '#654321' }))
  t.equal((await asAnn('POST', `/labels/${archived.id}/archive`)).statusCode, 200)
  t.same(await updated.next((v) => v.labelUpdated.name === 'archived'), { labelUpdated: { name: 'archived', color: '#654321' } }, 'an action announces an update')
  await graphql(app, `mutation { deleteLabel(id: "${label.id}") }`, { headers: ann.headers })
  t.same(await deleted.next((v) => v.labelDeleted.name === 'watched'), { labelDeleted: { id: String(label.id), name: 'watched' } })
})

t.test('as a hostile client: a deleted user\'s token, costly nesting, repeated and concurrent writes', async (t) => {
  const { app, ann, asAnn } = await setUp(t)
  const gone = await signedIn(app, { name: 'Gone' })
  t.equal((await apiClient(app, gone.headers)('DELETE', `/users/${gone.id}`)).statusCode, 204)
  t.equal((await apiClient(app, gone.headers)('GET', '/labels')).statusCode, 401, 'a deleted user\'s token reads nothing')
  t.equal((await apiClient(app, gone.headers)('POST', '/labels', { name: 'ghost' })).statusCode, 401)
  t.same(errorCodes(await graphql(app, '{ labels { name } }', { headers: gone.headers })), ['UNAUTHENTICATED'])

  const costly = await graphql(app, '{ labels(limit: 100) { posts(limit: 100) { author { posts(limit: 100) { title } } } } }', { headers: ann.headers })
  t.match(costly.errors?.[0]?.message, /cost/, 'nesting through declared relations counts against the cost limit')
  t.equal((await asAnn('GET', `/labels?include=${'owner,'.repeat(30)}owner`)).statusCode, 200, 'a repeated include is one include')
  t.equal((await asAnn('GET', `/labels?include=${'x'.repeat(201)}`)).statusCode, 400)

  const attempts = await Promise.all(Array.from({ length: 10 }, async () => asAnn('POST', '/labels', { name: 'race' })))
  t.same(attempts.map((res) => res.statusCode).sort(), [201, ...Array.from({ length: 9 }, () => 409)], 'one is made, the others are 409, none is a 500')
})

t.test('hooks: beforeCreate refuses the label past the limit, in both styles, and nothing is written', async (t) => {
  const { app, ann, asAnn, asBob } = await setUp(t)
  await sql`insert into labels (owner_id, name) select ${ann.id}, 'label ' || n from generate_series(1, ${LABELS_PER_OWNER - 1}) as n`.execute(app.db)
  t.equal((await asAnn('POST', '/labels', { name: 'the last one' })).statusCode, 201, 'up to the limit')
  const refused = await asAnn('POST', '/labels', { name: 'one too many' })
  t.equal(refused.statusCode, 422)
  t.same(body(refused), { error: `a user may have at most ${LABELS_PER_OWNER} labels` }, 'the hook\'s error in the contract\'s shape')
  const viaGraphql = await graphql(app, 'mutation { createLabel(input: {name: "by GraphQL"}) { id } }', { headers: ann.headers })
  t.same(errorCodes(viaGraphql), ['BAD_USER_INPUT'])
  t.equal(viaGraphql.errors?.[0]?.message, `a user may have at most ${LABELS_PER_OWNER} labels`)
  const keyed = await asAnn('POST', '/labels', { name: 'keyed' }, { 'idempotency-key': 'past-the-limit' })
  t.equal(keyed.statusCode, 422, 'with an Idempotency-Key too (the hook runs in the key\'s transaction)')
  const count = await sql<{ n: number }>`select count(*)::int as n from labels where owner_id = ${ann.id}`.execute(app.db)
  t.same(count.rows, [{ n: LABELS_PER_OWNER }], 'nothing past the limit was written')
  t.equal((await asBob('POST', '/labels', { name: 'one too many' })).statusCode, 201, 'the limit is per owner')
  await sql`delete from labels where owner_id = ${ann.id} and name = 'the last one'`.execute(app.db)
  const again = await asAnn('POST', '/labels', { name: 'keyed' }, { 'idempotency-key': 'past-the-limit' })
  t.equal(again.statusCode, 201, 'a refused key was given back: the same key runs again once there is room')
  t.equal((await asAnn('POST', '/labels', { name: 'keyed' }, { 'idempotency-key': 'past-the-limit' })).headers['idempotent-replayed'], 'true')
})

t.test('hooks: what throws after the write rolls the write back, whatever else the hook wrote; before hooks change the values', async (t) => {
  const shadow = async ({ trx, row }: { trx: import('../../db/connect.js').Db, row: Record<string, unknown> }) => {
    // A second row, written with the write's transaction: it must go with the write.
    await sql`insert into labels (owner_id, name) values (${row.owner_id}, ${'shadow of ' + String(row.name)})`.execute(trx)
  }
  const hooked = defineResource({
    ...labels.declaration,
    hooks: {
      async afterCreate (context) {
        await shadow(context)
        if (context.row.name === 'refused') throw conflict('refused after the insert', 'name')
        if (context.row.name === 'broken') throw new Error('a bug in the hook')
      },
      async beforeUpdate ({ values }) { return typeof values.name === 'string' ? { ...values, name: values.name.toLowerCase() } : values },
      async afterUpdate ({ row, current }) { if (row.name === 'refused') throw conflict(`${String(current.name)} may not become refused`) },
      async afterDelete ({ row }) { if (row.name === 'kept') throw conflict('kept labels stay') }
    }
  } as Parameters<typeof defineResource>[0])
  const app = await build(t, { resources: [hooked], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const asAnn = apiClient(app, ann.headers)
  const names = async () => (await sql<{ name: string }>`select name from labels order by name`.execute(app.db)).rows.map((r) => r.name)

  t.equal((await asAnn('POST', '/labels', { name: 'fine' })).statusCode, 201)
  t.same(await names(), ['fine', 'shadow of fine'], 'a hook writes with the write')
  const refused = await asAnn('POST', '/labels', { name: 'refused' })
  t.equal(refused.statusCode, 409)
  t.same(body(refused), { error: 'refused after the insert', field: 'name' })
  const broken = await asAnn('POST', '/labels', { name: 'broken' }, { 'idempotency-key': 'broken-hook' })
  t.equal(broken.statusCode, 500, 'any other error is a 500')
  t.notMatch(broken.body, /a bug in the hook/, 'whose text stays on the server')
  t.same(errorCodes(await graphql(app, 'mutation { createLabel(input: {name: "refused"}) { id } }', { headers: ann.headers })), ['CONFLICT'])
  t.same(errorCodes(await graphql(app, 'mutation { createLabel(input: {name: "broken"}) { id } }', { headers: ann.headers })), ['INTERNAL_SERVER_ERROR'])
  t.same(await names(), ['fine', 'shadow of fine'], 'neither the refused rows nor their shadows remain')

  const label = body<Label>(await asAnn('POST', '/labels', { name: 'Kept' }))
  t.same(body(await asAnn('PATCH', `/labels/${label.id}`, { name: 'KEPT' })), { ...label, name: 'kept' }, 'beforeUpdate changed what is written')
  const update = await asAnn('PUT', `/labels/${label.id}`, { name: 'Refused' })
  t.equal(update.statusCode, 409)
  t.same(body(update), { error: 'kept may not become refused' }, 'afterUpdate sees the row as it was')
  t.same(errorCodes(await graphql(app, `mutation { updateLabel(id: "${label.id}", input: {name: "refused"}) { id } }`, { headers: ann.headers })), ['CONFLICT'])
  t.equal((await asAnn('DELETE', `/labels/${label.id}`)).statusCode, 409)
  t.same(errorCodes(await graphql(app, `mutation { deleteLabel(id: "${label.id}") }`, { headers: ann.headers })), ['CONFLICT'])
  t.same(await names(), ['fine', 'kept', 'shadow of Kept', 'shadow of fine'], 'the refused update and deletions left the row as it was')
})

t.test('races: concurrent creates at the limit never pass it (the owner\'s row is locked in the hook), concurrent archives archive once', {
  skip: serverUrl() === undefined ? 'needs a real PostgreSQL (set DATABASE_URL): PGlite runs one transaction at a time, so this race cannot happen on it' : false
}, async (t) => {
  const { app, ann, asAnn } = await setUp(t)
  const ROOM = 3
  const RACERS = 12
  for (let round = 0; round < 5; round++) {
    await sql`delete from labels`.execute(app.db)
    await sql`insert into labels (owner_id, name) select ${ann.id}, 'label ' || n from generate_series(1, ${LABELS_PER_OWNER - ROOM}) as n`.execute(app.db)
    const attempts = await Promise.all(Array.from({ length: RACERS }, async (_, n) => asAnn('POST', '/labels', { name: `racer ${n}` })))
    t.same(attempts.map((res) => res.statusCode).sort(), [...Array.from({ length: ROOM }, () => 201), ...Array.from({ length: RACERS - ROOM }, () => 422)], `round ${round}: as many made as there was room for`)
    const count = await sql<{ n: number }>`select count(*)::int as n from labels where owner_id = ${ann.id}`.execute(app.db)
    t.same(count.rows, [{ n: LABELS_PER_OWNER }], `round ${round}: never past the limit`)
  }
  await sql`delete from labels`.execute(app.db)
  const label = body<Label>(await asAnn('POST', '/labels', { name: 'archived once' }))
  const archives = await Promise.all(Array.from({ length: RACERS }, async () => asAnn('POST', `/labels/${label.id}/archive`)))
  t.same(archives.map((res) => res.statusCode).sort(), [200, ...Array.from({ length: RACERS - 1 }, () => 409)], 'an action runs on the locked row: one archive, the others 409')
})

t.test('actions: POST /labels/{id}/archive on the locked row, with the owner rule, If-Match and Idempotency-Key', async (t) => {
  const { app, ann, asAnn, asBob } = await setUp(t)
  const created = await asAnn('POST', '/labels', { name: 'old' })
  const label = body<Label>(created)
  t.equal(label.archived_at, null)
  t.equal((await apiClient(app)('POST', `/labels/${label.id}/archive`)).statusCode, 401)
  const theirs = await asBob('POST', `/labels/${label.id}/archive`)
  t.equal(theirs.statusCode, 403)
  t.same(body(theirs), { error: 'only its owner may archive this label' })
  t.same(body(await asAnn('POST', '/labels/999999/archive')), { error: 'label not found' })
  t.equal((await asAnn('POST', '/labels/999999/archive')).statusCode, 404)
  t.equal((await asAnn('POST', `/labels/${label.id}/archive`, undefined, { 'if-match': '"stale"' })).statusCode, 412)
  t.equal((await asAnn('POST', `/labels/${label.id}/unarchive`)).statusCode, 404, 'an action that is not declared')
  for (const payload of ['[1]', 'null', '{"reason":"tidy"}', '"archive"']) {
    const refused = await app.inject({ method: 'POST', url: `/api/v1/labels/${label.id}/archive`, headers: { ...ann.headers, 'content-type': 'application/json' }, payload })
    t.same([refused.statusCode, body(refused)], [400, { error: 'archive takes no body', field: 'body' }], `regression: an action without input ran with the body ${payload}`)
  }
  t.equal((await asAnn('POST', `/labels/${label.id}/archive`, {}, { 'if-match': '"stale"' })).statusCode, 412, 'an empty object is no body')

  const archived = await asAnn('POST', `/labels/${label.id}/archive`, undefined, { 'if-match': String(created.headers.etag) })
  t.equal(archived.statusCode, 200)
  t.same(body(archived), { ...label, archived_at: body<Label>(archived).archived_at })
  t.match(body<Label>(archived).archived_at, /^\d{4}-\d\d-\d\dT.*Z$/)
  const read = await asAnn('GET', `/labels/${label.id}`)
  t.same(body(read), body(archived))
  t.equal(read.headers.etag, archived.headers.etag, 'the answer carries the ETag of the row it left')
  const twice = await asAnn('POST', `/labels/${label.id}/archive`)
  t.equal(twice.statusCode, 409)
  t.same(body(twice), { error: 'already archived' })
  t.equal((await asAnn('PATCH', `/labels/${label.id}`, { archived_at: null })).statusCode, 400, 'archived_at is not writable')

  const fresh = body<Label>(await asAnn('POST', '/labels', { name: 'fresh' }))
  const first = await asAnn('POST', `/labels/${fresh.id}/archive`, undefined, { 'idempotency-key': 'archive-fresh' })
  const replay = await asAnn('POST', `/labels/${fresh.id}/archive`, undefined, { 'idempotency-key': 'archive-fresh' })
  t.equal(first.statusCode, 200)
  t.equal(replay.statusCode, 200, 'the replay is the first answer, not a 409')
  t.equal(replay.headers['idempotent-replayed'], 'true')
  t.equal(replay.body, first.body)
  t.equal(replay.headers.etag, first.headers.etag)
  const rows = await sql<{ name: string, archived: boolean }>`select name, archived_at is not null as archived from labels where owner_id = ${ann.id} order by id`.execute(app.db)
  t.same(rows.rows, [{ name: 'old', archived: true }, { name: 'fresh', archived: true }])

  const doc = body<{ paths: Record<string, Record<string, any>> }>(await app.inject({ method: 'GET', url: '/openapi.json' }))
  const entry = doc.paths['/api/v1/labels/{id}/archive']?.post
  t.match(entry, { summary: 'Archive a label (once)', tags: ['labels'], responses: { 200: Object, 401: Object, 403: Object, 404: Object, 409: Object, 412: Object } }, 'in the OpenAPI document')
})

t.test('actions in GraphQL: archiveLabel(id) with the same rules and answers', async (t) => {
  const { app, ann, bob, asAnn } = await setUp(t)
  const label = body<Label>(await asAnn('POST', '/labels', { name: 'old' }))
  const archive = (id: number | string, headers?: Record<string, string>) =>
    graphql(app, `mutation { archiveLabel(id: "${id}") { id name archivedAt owner { name } } }`, headers === undefined ? {} : { headers })
  t.same(errorCodes(await archive(label.id)), ['UNAUTHENTICATED'])
  t.same(errorCodes(await archive(label.id, bob.headers)), ['FORBIDDEN'])
  t.same(errorCodes(await archive(999999, ann.headers)), ['NOT_FOUND'])
  const done = await archive(label.id, ann.headers)
  t.same(done.errors, undefined)
  t.match(done.data?.archiveLabel, { id: String(label.id), name: 'old', archivedAt: /Z$/, owner: { name: 'Ann' } })
  t.equal(body<Label>(await asAnn('GET', `/labels/${label.id}`)).archived_at, done.data?.archiveLabel.archivedAt, 'the row REST reads')
  const twice = await archive(label.id, ann.headers)
  t.same(errorCodes(twice), ['CONFLICT'])
  t.equal(twice.errors?.[0]?.message, 'already archived')
})

t.test('actions with an input, checked alike in both styles; what an action wrote goes when it throws', async (t) => {
  const recolor = Type.Object({ color: Type.String({ pattern: '^#[0-9a-f]{6}$' }), also_rename: Type.Optional(Type.String({ minLength: 1 })), like_id: Type.Optional(Type.Integer()) })
  const withInput = defineResource({
    ...labels.declaration,
    actions: {
      recolor: {
        auth: 'ownerOrAdmin',
        input: recolor,
        async run ({ trx, row, input }) {
          const { color, also_rename: rename, like_id: like } = input as Static<typeof recolor>
          const { rows } = await sql<Label>`update labels set color = coalesce((select color from labels where id = ${like ?? null}), ${color}), name = ${rename ?? row.name} where id = ${row.id} returning *`.execute(trx)
          if (color === '#000000') throw conflict('black is not a colour', 'color')
          return rows[0] as Label
        }
      }
    }
  } as Parameters<typeof defineResource>[0])
  const app = await build(t, { resources: [withInput], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const asAnn = apiClient(app, ann.headers)
  const label = body<Label>(await asAnn('POST', '/labels', { name: 'plain' }))

  t.equal((await asAnn('POST', `/labels/${label.id}/recolor`)).statusCode, 400, 'the body is required')
  t.match(body(await asAnn('POST', `/labels/${label.id}/recolor`, { color: '#00ff00', extra: 1 })), { field: 'extra' }, 'an input is closed unless the host opens it')
  const bad = await asAnn('POST', `/labels/${label.id}/recolor`, { color: 'red' })
  t.equal(bad.statusCode, 400)
  t.match(body(bad), { field: 'color' })
  t.match(body(await asAnn('POST', `/labels/${label.id}/recolor`, { color: '#000000', also_rename: 'dark' })), { error: 'black is not a colour', field: 'color' })
  t.same((await sql`select name, color from labels`.execute(app.db)).rows, [{ name: 'plain', color: null }], 'the refused action\'s write was rolled back')
  t.match(body(await asAnn('POST', `/labels/${label.id}/recolor`, { color: '#00ff00' })), { name: 'plain', color: '#00ff00' })
  t.match(body(await apiClient(app, await adminToken(app))('POST', `/labels/${label.id}/recolor`, { color: '#0000ff' })), { color: '#0000ff' }, 'ownerOrAdmin lets an administrator')

  t.same(errorCodes(await graphql(app, `mutation { recolorLabel(id: "${label.id}", input: {color: "red"}) { color } }`, { headers: ann.headers })), ['BAD_USER_INPUT'])
  t.match((await graphql(app, `mutation { recolorLabel(id: "${label.id}") { color } }`, { headers: ann.headers })).errors?.[0]?.message, /input/, 'the input is required when a field is')
  const renamed = await graphql(app, `mutation { recolorLabel(id: "${label.id}", input: {color: "#ff0000", alsoRename: "red"}) { name color } }`, { headers: ann.headers })
  t.same(renamed.data, { recolorLabel: { name: 'red', color: '#ff0000' } }, 'input fields in camelCase')
  const other = body<Label>(await asAnn('POST', '/labels', { name: 'other', color: '#abcdef' }))
  const like = await graphql(app, `mutation { recolorLabel(id: "${label.id}", input: {color: "#ff0000", likeId: "${other.id}"}) { color } }`, { headers: ann.headers })
  t.same(like.data, { recolorLabel: { color: '#abcdef' } }, 'an ID input field is the integer the input schema wants')
  t.same(errorCodes(await graphql(app, `mutation { recolorLabel(id: "${label.id}", input: {color: "#ff0000", likeId: "x"}) { color } }`, { headers: ann.headers })), ['BAD_USER_INPUT'])
  const doc = body<{ paths: Record<string, Record<string, any>> }>(await app.inject({ method: 'GET', url: '/openapi.json' }))
  t.ok(doc.paths['/api/v1/labels/{id}/recolor']?.post?.requestBody, 'the input is the OpenAPI request body')
})

t.test('a public resource asks for a token before it embeds a relation whose target is not public', async (t) => {
  const publicLabels = defineResource({ ...labels.declaration, auth: { ...labels.declaration.auth, read: 'public' } } as Parameters<typeof defineResource>[0])
  const app = await build(t, { resources: [publicLabels], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const label = body<Label>(await apiClient(app, ann.headers)('POST', '/labels', { name: 'open' }))
  const anonymous = apiClient(app)
  t.equal((await anonymous('GET', '/labels')).statusCode, 200, 'anyone reads the labels')
  t.equal((await anonymous('GET', '/labels?include=owner')).statusCode, 401, 'but not the users they point at')
  t.equal((await anonymous('GET', `/labels/${label.id}/posts`)).statusCode, 401)
  t.match(body(await apiClient(app, ann.headers)('GET', '/labels?include=owner')), { data: [{ owner: { name: 'Ann' } }] })
  t.same((await graphql(app, '{ labels { name } }')).data, { labels: [{ name: 'open' }] })
  t.same(errorCodes(await graphql(app, '{ labels { owner { email } } }')), ['UNAUTHENTICATED'])
})

t.test('examples/labels.graphql is the SDL the declaration gives (regenerate: npx tsx examples/print-sdl.ts > examples/labels.graphql)', async (t) => {
  t.equal(resourceSdl([labels]) + '\n', readFileSync(new URL('../../examples/labels.graphql', import.meta.url), 'utf8'))
})

t.test('a mistaken declaration fails at start, naming the mistake', async (t) => {
  const representation = Type.Object({ id: Type.Integer(), name: Type.String(), owner_id: Type.Integer() })
  const base = { name: 'thing', table: 'things', representation, generated: ['id'] as Array<'id'>, writable: ['name'] as Array<'name'> }
  t.throws(() => defineResource({ ...base, writable: ['nope' as 'name'] }), /writable names nope/)
  t.throws(() => defineResource({ ...base, generated: ['id', 'name'] }), /name is both generated and writable/)
  t.throws(() => defineResource({ ...base, auth: { update: 'owner' } }), /needs an `owner` field/)
  t.throws(() => defineResource({ ...base, owner: 'owner_id', auth: { delete: 'public' } }), /auth\.delete must be one of .* never public/)
  t.throws(() => defineResource({ ...base, representation: Type.Object({ id: Type.Integer(), name: Type.String(), owner_id: Type.String() }), owner: 'owner_id' }),
    /the owner owner_id names a user, so it is Type\.Integer\(\)/, 'an owner column that cannot hold a user\'s id')
  t.throws(() => defineResource({ ...base, representation: Type.Object({ id: Type.String({ format: 'uuid' }), name: Type.String() }), owner: 'id', auth: { update: 'owner' } }),
    /the owner id names a user.*its own owner has an integer key/, 'a row of a uuid key cannot be its own owner')
  t.doesNotThrow(() => defineResource({ ...base, representation: Type.Object({ id: Type.Integer(), name: Type.String(), owner_id: Type.Union([Type.Integer(), Type.Null()]) }), owner: 'owner_id' }), 'an owner that may be null')
  t.throws(() => defineResource({ ...base, table: 'Things; drop' }), /table must be/)
  const withTotal = Type.Object({ id: Type.Integer(), name: Type.String(), total: Type.Integer() })
  t.throws(() => defineResource({ name: 'sum', table: 'sums', representation: withTotal, generated: ['id'], writable: ['name'], filters: ['total'] }), /a filter cannot be named total/)
  // The built-in resources' names are taken when served beside them, as any two resources' are.
  await t.rejects(build(t, { resources: [defineResource({ ...base, name: 'user', table: 'users' })] }), /defineResource\("user"\): the name user is taken by a built-in resource/)
  t.throws(() => defineResource({ ...base, relations: { things: { hasMany: 'post', belongsTo: 'user', key: 'x' } as never } }), /exactly one of/)
  t.throws(() => defineResource({ ...base, relations: { posts: { manyToMany: 'post', key: 'thing_id' } as never } }), /relations\.posts\.through is required/)
  t.throws(() => defineResource({ ...base, relations: { ownerId: { belongsTo: 'user', key: 'owner_id' } } }), /not a field/)
  const unknownKey = defineResource({ ...base, relations: { posts: { hasMany: 'post', key: 'thing_id' } } })
  await t.rejects(build(t, { resources: [unknownKey] }), /post has no field "thing_id"/, 'a key the target does not have stops the start')
  const run = async <Row> ({ row }: { row: Row }) => row
  const owned = { ...base, owner: 'owner_id' as const }
  t.throws(() => defineResource({ ...owned, actions: { Archive: { auth: 'owner', run } } }), /actions\.Archive: the name must be lower camel case/)
  t.throws(() => defineResource({ ...owned, actions: { 'archive-now': { auth: 'owner', run } } }), /must be lower camel case/)
  t.throws(() => defineResource({ ...owned, actions: { delete: { auth: 'owner', run } } }), /action delete is taken/)
  t.throws(() => defineResource({ ...owned, relations: { posts: { hasMany: 'post', key: 'thing_id' } }, actions: { posts: { auth: 'owner', run } } }), /action posts is also a relation/)
  t.throws(() => defineResource({ ...owned, actions: { archive: { auth: 'public' as 'owner', run } } }), /actions\.archive\.auth must be one of authenticated, admin, owner or ownerOrAdmin/)
  t.throws(() => defineResource({ ...base, actions: { archive: { auth: 'owner', run } } }), /the archive rule owner needs an `owner` field/)
  t.throws(() => defineResource({ ...owned, actions: { archive: { auth: 'owner' } as never } }), /actions\.archive\.run is required/)
  t.throws(() => defineResource({ ...owned, actions: { archive: { auth: 'owner', input: Type.String() as never, run } } }), /input must be a Type.Object/)
  t.throws(() => defineResource({ ...owned, actions: { archive: { auth: 'owner', input: Type.Object({ Why: Type.String() }), run } } }), /actions\.archive\.input must be a Type\.Object with at least one field, each named in lower case/)
  t.throws(() => defineResource({ ...base, hooks: { beforeInsert: async () => {} } as never }), /hooks\.beforeInsert is not a hook/)
  t.throws(() => defineResource({ ...base, hooks: { afterCreate: 'audit' } as never }), /hooks\.afterCreate must be a function/)
  t.doesNotThrow(() => defineResource({ ...base, owner: 'owner_id' }))
})

// Through `inverse`, a declaration adds relations to the resource it points at: the example's
// labels give posts `labels`. Notes (declared here) are read by their owners only, so what they
// add to posts, users, labels and notes is narrowed to the caller's notes.
const notes = defineResource({
  name: 'note',
  table: 'notes',
  representation: Type.Object({
    id: Type.Integer(),
    owner_id: Type.Integer(),
    post_id: Type.Integer(),
    label_id: Type.Union([Type.Integer(), Type.Null()]),
    reply_to: Type.Union([Type.Integer(), Type.Null()]),
    comment_id: Type.Union([Type.Integer(), Type.Null()]),
    text: Type.String({ minLength: 1 })
  }),
  generated: ['id'],
  owner: 'owner_id',
  writable: ['post_id', 'label_id', 'reply_to', 'comment_id', 'text'],
  search: ['text'],
  relations: {
    owner: { belongsTo: 'user', key: 'owner_id', inverse: 'notes' },
    post: { belongsTo: 'post', key: 'post_id', inverse: 'notes' },
    label: { belongsTo: 'label', key: 'label_id', inverse: 'notes' },
    comment: { belongsTo: 'comment', key: 'comment_id', inverse: 'notes' },
    replies: { hasMany: 'note', key: 'reply_to', inverse: 'parent' }
  },
  auth: { read: 'owner', create: 'authenticated', update: 'owner', delete: 'owner' }
})
const withNotes = {
  ...migrations,
  '0002_notes': {
    async up (db: Kysely<any>) {
      await sql`create table notes (
        id serial primary key,
        owner_id integer not null references users (id) on delete cascade,
        post_id integer not null references posts (id) on delete cascade,
        label_id integer references labels (id) on delete cascade,
        reply_to integer references notes (id) on delete cascade,
        comment_id integer references comments (id) on delete cascade,
        text text not null)`.execute(db)
      for (const column of ['owner_id', 'post_id', 'label_id', 'reply_to', 'comment_id']) await sql`create index ${sql.id(`notes_${column}_id_idx`)} on notes (${sql.ref(column)}, id)`.execute(db)
    },
    async down (db: Kysely<any>) { await sql`drop table notes`.execute(db) }
  }
}

type Titled = { id: number, title: string }
type Named = { id: number, name: string }

/** Ann's labels on Bob's posts: `one` carries a, b and c; `two` carries b; `three` none. */
async function labelledPosts (t: Parameters<typeof build>[0], options: Parameters<typeof build>[1] = {}) {
  const app = await build(t, { resources: [labels, notes], migrations: withNotes, ...options })
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const asAnn = apiClient(app, ann.headers)
  const asBob = apiClient(app, bob.headers)
  const posts: Titled[] = []
  for (const title of ['one', 'two', 'three']) posts.push(body<Titled>(await asBob('POST', '/posts', { title, content: 'c' })))
  const made: Named[] = []
  for (const name of ['alpha', 'bravo', 'charlie']) made.push(body<Named>(await asAnn('POST', '/labels', { name })))
  const [one, two] = posts as [Titled, Titled, Titled]
  const [a, b, c] = made as [Named, Named, Named]
  await sql`insert into post_labels (label_id, post_id) values (${a.id}, ${one.id}), (${b.id}, ${one.id}), (${c.id}, ${one.id}), (${b.id}, ${two.id})`.execute(app.db)
  return { app, ann, bob, asAnn, asBob, posts, labels: made }
}

t.test('inverse: a post\'s labels as a nested list, with the list parameters of the labels', async (t) => {
  const { app, asBob, posts: [one, two, three] } = await labelledPosts(t)
  const path = `/posts/${one?.id}/labels`
  const first = await asBob('GET', `${path}?limit=2`)
  t.equal(first.statusCode, 200)
  const page = body<{ data: Named[], pagination: { hasMore: boolean, nextCursor: string } }>(first)
  t.same(page.data.map((label) => label.name), ['alpha', 'bravo'])
  t.match(page.data[0], { id: Number, owner_id: Number, name: 'alpha', color: null, created_at: String }, 'labels as their own routes show them')
  t.match(first.headers.link, /rel="next"/)
  const rest = body<{ data: Named[] }>(await asBob('GET', `${path}?limit=2&cursor=${encodeURIComponent(page.pagination.nextCursor)}`))
  t.same(rest.data.map((label) => label.name), ['charlie'])
  t.same(body<{ data: Named[] }>(await asBob('GET', `${path}?sort=-name&fields=name`)).data.map((label) => Object.keys(label).sort().join()), ['id,name', 'id,name', 'id,name'])
  t.same(body<{ data: Named[] }>(await asBob('GET', `${path}?sort=-name`)).data.map((label) => label.name), ['charlie', 'bravo', 'alpha'])
  t.same(body<{ data: Named[] }>(await asBob('GET', `${path}?q=harl`)).data.map((label) => label.name), ['charlie'])
  t.same(body<{ data: Named[] }>(await asBob('GET', `/posts/${two?.id}/labels`)).data.map((label) => label.name), ['bravo'])
  t.same(body<{ data: Named[] }>(await asBob('GET', `/posts/${three?.id}/labels`)).data, [])
  t.equal((await asBob('GET', `${path}?sort=-name&cursor=${encodeURIComponent(page.pagination.nextCursor)}`)).statusCode, 400, 'a cursor is bound to its sort')
  // The labels' own list (issue 40, 5): their include= and filters too.
  const withOwner = body<{ data: Array<Record<string, unknown>> }>(await asBob('GET', `${path}?include=owner&fields=name&limit=1`)).data
  t.same([withOwner.length, Object.keys(withOwner[0] ?? {}).sort()], [1, ['id', 'name', 'owner']], 'include= of the labels, with fields=')
  t.match(withOwner[0], { name: 'alpha', owner: { name: 'Ann' } })
  t.equal((await asBob('GET', `${path}?include=posts`)).statusCode, 200)
  t.equal((await asBob('GET', `${path}?include=nope`)).statusCode, 400)
  t.same(body<{ data: Named[] }>(await asBob('GET', `${path}?name=bravo`)).data.map((label) => label.name), ['bravo'], 'a filter of the labels')
  t.same(body(await asBob('GET', '/posts/999999/labels')), { error: 'post not found' })
  t.equal((await apiClient(app)('GET', path)).statusCode, 401, 'labels are read by signed-in users only')
})

t.test('inverse: include=labels wherever posts are listed or read', async (t) => {
  const { app, bob, asAnn, posts: [one, two, three] } = await labelledPosts(t)
  const names = (post: { labels: Named[] }) => post.labels.map((label) => label.name)
  const item = body<Titled & { labels: Named[], author: Named }>(await asAnn('GET', `/posts/${one?.id}?include=labels,author`))
  t.same(names(item), ['alpha', 'bravo', 'charlie'])
  t.equal(item.author.name, 'Bob', 'with the built-in relations')
  t.same(Object.keys(body(await asAnn('GET', `/posts/${two?.id}?include=labels&fields=title`))).sort(), ['id', 'labels', 'title'])
  const list = body<{ data: Array<Titled & { labels: Named[] }> }>(await asAnn('GET', '/posts?include=labels,comments'))
  t.same(list.data.map((post) => [post.title, names(post)]), [['one', ['alpha', 'bravo', 'charlie']], ['two', ['bravo']], ['three', []]])
  const ofBob = body<{ data: Array<Titled & { labels: Named[] }> }>(await asAnn('GET', `/users/${bob.id}/posts?include=labels&limit=2`))
  t.same(ofBob.data.map((post) => names(post)), [['alpha', 'bravo', 'charlie'], ['bravo']])
  t.notOk('labels' in body(await asAnn('GET', `/posts/${three?.id}`)), 'only when asked')
  t.match(body(await asAnn('GET', '/posts?include=tags')), { error: 'include names no relation that can be included; includable: author, comments, labels, notes', field: 'include' })

  const doc = body<{ paths: Record<string, any> }>(await app.inject({ method: 'GET', url: '/openapi.json' }))
  t.ok(doc.paths['/api/v1/posts/{id}/labels']?.get, 'the nested list is in the OpenAPI document')
  const include = (doc.paths['/api/v1/posts']?.get.parameters as Array<{ name: string, description?: string }>).find((parameter) => parameter.name === 'include')
  t.match(include?.description, /labels/, 'and so is the include value')
  t.match(JSON.stringify(doc.paths['/api/v1/posts/{id}']?.get.responses['200']), /"labels"/)
})

t.test('inverse: an owner read rule narrows what every inverse shows to the caller\'s rows', async (t) => {
  const { app, ann, bob, asAnn, asBob, posts: [one, two], labels: [alpha] } = await labelledPosts(t)
  const note = async (as: typeof asAnn, values: Record<string, unknown>) => body<{ id: number, text: string }>(await as('POST', '/notes', values))
  const annsNote = await note(asAnn, { post_id: one?.id, label_id: alpha?.id, text: 'ann on one' })
  await note(asBob, { post_id: one?.id, label_id: alpha?.id, text: 'bob on one' })
  await note(asAnn, { post_id: two?.id, reply_to: annsNote.id, text: 'ann replies' })
  // Regression (issue 37): Bob could reply to Ann's note, which he cannot read. A key that names a row
  // the caller may not read is the 422 of a missing one; a reply made otherwise (before the note was Ann's) stays his.
  const replying = await asBob('POST', '/notes', { post_id: two?.id, reply_to: annsNote.id, text: 'bob replies' })
  t.same([replying.statusCode, body(replying)], [422, { error: 'reply_to refers to something that does not exist', field: 'reply_to' }])
  await sql`insert into notes (owner_id, post_id, reply_to, text) values (${bob.id}, ${two?.id}, ${annsNote.id}, 'bob replies')`.execute(app.db)
  const texts = (rows: Array<{ text: string }>) => rows.map((row) => row.text)

  t.same(texts(body<{ data: Array<{ text: string }> }>(await asAnn('GET', `/posts/${one?.id}/notes`)).data), ['ann on one'])
  t.same(texts(body<{ data: Array<{ text: string }> }>(await asBob('GET', `/posts/${one?.id}/notes`)).data), ['bob on one'])
  const posts = body<{ data: Array<{ notes: Array<{ text: string }> }> }>(await asBob('GET', '/posts?include=notes&limit=2'))
  t.same(posts.data.map((post) => texts(post.notes)), [['bob on one'], ['bob replies']])
  t.same(texts(body<{ data: Array<{ text: string }> }>(await asBob('GET', `/users/${ann.id}/notes`)).data), [], 'Ann\'s notes are hers alone')
  t.same(texts(body<{ notes: Array<{ text: string }> }>(await asAnn('GET', `/users/${ann.id}?include=notes`)).notes), ['ann on one', 'ann replies'])
  t.same(texts(body<{ data: Array<{ text: string }> }>(await asBob('GET', `/labels/${alpha?.id}/notes`)).data), ['bob on one'], 'on a declared resource too')
  const alphas = body<{ data: Array<{ name: string, notes: Array<{ text: string }> }> }>(await asAnn('GET', '/labels?include=notes&name=alpha'))
  t.same(alphas.data.map((label) => texts(label.notes)), [['ann on one']])

  // The inverse of a hasMany is the row it belongs to, and the owner rule holds there too.
  const replies = body<{ data: Array<{ text: string, parent: { text: string } | null }> }>(await asAnn('GET', '/notes?include=parent&fields=text'))
  t.same(replies.data.map((row) => [row.text, row.parent?.text ?? null]), [['ann on one', null], ['ann replies', 'ann on one']])
  t.same(Object.keys(replies.data[1] ?? {}).sort(), ['id', 'parent', 'text'], 'the key it is found by is read, not shown')
  const bobs = body<{ data: Array<{ text: string, parent: { text: string } | null }> }>(await asBob('GET', '/notes?include=parent'))
  t.same(bobs.data.map((row) => [row.text, row.parent]), [['bob on one', null], ['bob replies', null]], 'Ann\'s note is not Bob\'s to see')
  t.equal((await apiClient(app)('GET', `/posts/${one?.id}/notes`)).statusCode, 401)
  const comment = body<{ id: number }>(await asAnn('POST', `/posts/${one?.id}/comments`, { text: 'nice' }))
  await note(asAnn, { post_id: one?.id, comment_id: comment.id, text: 'ann on the comment' })
  await note(asBob, { post_id: one?.id, comment_id: comment.id, text: 'bob on the comment' })
  t.same(texts(body<{ data: Array<{ text: string }> }>(await asBob('GET', `/comments/${comment.id}/notes`)).data), ['bob on the comment'], 'on comments too')
  const comments = body<{ data: Array<{ text: string, notes: Array<{ text: string }> }> }>(await asAnn('GET', `/posts/${one?.id}/comments?include=notes`))
  t.same(comments.data.map((row) => texts(row.notes)), [['ann on the comment']])
  t.equal((await asAnn('GET', '/comments/999999/notes')).statusCode, 404)
})

t.test('inverse: a public resource asks for a token before it shows an inverse that needs one', async (t) => {
  const publicLabels = defineResource({ ...labels.declaration, auth: { ...labels.declaration.auth, read: 'public' } } as Parameters<typeof defineResource>[0])
  const { app, asAnn, posts: [one], labels: [alpha] } = await labelledPosts(t, { resources: [publicLabels, notes] })
  t.equal((await asAnn('POST', '/notes', { post_id: one?.id, label_id: alpha?.id, text: 'mine' })).statusCode, 201)
  const anonymous = apiClient(app)
  t.equal((await anonymous('GET', `/labels/${alpha?.id}`)).statusCode, 200, 'anyone reads a label')
  t.equal((await anonymous('GET', `/labels/${alpha?.id}/notes`)).statusCode, 401, 'but its notes need a caller')
  t.equal((await anonymous('GET', '/labels?include=notes')).statusCode, 401)
  t.same(body<{ data: Array<{ text: string }> }>(await asAnn('GET', `/labels/${alpha?.id}/notes`)).data.map((row) => row.text), ['mine'])
})

t.test('inverse: a name that is not lower camel case, or that is taken on its resource, stops the start', async (t) => {
  const representation = Type.Object({ id: Type.Integer(), name: Type.String(), post_id: Type.Integer() })
  const base = { name: 'thing', table: 'things', representation, generated: ['id'] as Array<'id'>, writable: ['name'] as Array<'name'> }
  const on = (inverse: string, relation: Record<string, string> = { belongsTo: 'post', key: 'post_id' }) =>
    defineResource({ ...base, relations: { post: { ...relation, inverse } as never } })
  t.throws(() => on('Things'), /relations\.post\.inverse must be lower camel case letters and digits/)
  t.throws(() => on('the_things'), /inverse must be lower camel case letters and digits/)
  for (const [inverse, why] of [['comments', 'a relation of posts'], ['author', 'a relation of posts'], ['title', 'a field of posts'], ['authorId', 'a field of posts, as GraphQL names it']] as const) {
    await t.rejects(build(t, { resources: [on(inverse)] }), new RegExp(`relation post: inverse ${inverse} is taken on post`), why)
  }
  await t.rejects(build(t, { resources: [labels, on('labels')] }), /inverse labels is taken on post/, 'two inverses of one name')
  await t.rejects(build(t, { resources: [on('orders', { belongsTo: 'user', key: 'post_id' })] }), /inverse orders is taken on user/, 'a nested route of users')
  await t.rejects(build(t, { resources: [labels, on('name', { belongsTo: 'label', key: 'post_id' })] }), /inverse name is taken on label/, 'a field of a declared resource')
  await t.rejects(build(t, { resources: [labels, on('posts', { belongsTo: 'label', key: 'post_id' })] }), /inverse posts is taken on label/, 'a relation of a declared resource')
})

t.test('inverse in GraphQL: Post.labels, loaded with everything below a level in one statement, for any number of posts', async (t) => {
  const recorded = recordSql(await testDb())
  const { app, ann, bob, posts } = await labelledPosts(t, { db: recorded.db })
  const counted = async (query: string, headers = ann.headers) => {
    recorded.statements.length = 0
    const res = await graphql(app, query, { headers })
    return { res, statements: recorded.statements.filter((statement) => !/revoked_tokens|persisted_queries|login_failures/.test(statement)).length }
  }
  const nested = await counted('{ users { name posts { title labels { name } } } }')
  t.same(nested.res.errors, undefined)
  t.same(nested.res.data?.users, [
    { name: 'Ann', posts: [] },
    { name: 'Bob', posts: [{ title: 'one', labels: [{ name: 'alpha' }, { name: 'bravo' }, { name: 'charlie' }] }, { title: 'two', labels: [{ name: 'bravo' }] }, { title: 'three', labels: [] }] }
  ])
  t.equal(nested.statements, 1, 'the users, their posts and the posts\' labels in one statement')

  const through = await counted('{ labels(limit: 2) { name posts { title labels(limit: 1) { name owner { name } } } } }')
  t.same(through.res.data?.labels, [
    { name: 'alpha', posts: [{ title: 'one', labels: [{ name: 'alpha', owner: { name: 'Ann' } }] }] },
    { name: 'bravo', posts: [{ title: 'one', labels: [{ name: 'alpha', owner: { name: 'Ann' } }] }, { title: 'two', labels: [{ name: 'bravo', owner: { name: 'Ann' } }] }] }
  ])
  t.equal(through.statements, 1, 'the labels, their posts, their labels and owners in one statement')

  const one = await counted(`{ post(id: "${posts[0]?.id}") { title author { name } labels(limit: 2) { name } comments { text } } }`)
  t.same(one.res.data, { post: { title: 'one', author: { name: 'Bob' }, labels: [{ name: 'alpha' }, { name: 'bravo' }], comments: [] } })
  t.equal(one.statements, 2, 'the post, then its author, comments and labels in one statement')
  const keys = await graphql(app, '{ users { a: posts(limit: 1) { labels { name } } b: posts(limit: 2) { title labels { name } } } }', { headers: bob.headers })
  t.same(keys.data?.users[1], { a: [{ labels: [{ name: 'alpha' }, { name: 'bravo' }, { name: 'charlie' }] }], b: [{ title: 'one', labels: [{ name: 'alpha' }, { name: 'bravo' }, { name: 'charlie' }] }, { title: 'two', labels: [{ name: 'bravo' }] }] }, 'answers per response key')

  const made = await graphql(app, `mutation { createPost(input: {title: "fresh", content: "c", authorId: "${bob.id}"}) { title labels { name } } }`, { headers: bob.headers })
  t.same(made.data, { createPost: { title: 'fresh', labels: [] } })
  const perKey = await graphql(app, '{ users { posts(limit: 1) { a: labels(limit: 1) { name } b: labels(limit: 2) { name } } } }', { headers: ann.headers })
  t.same(perKey.data?.users[1], { posts: [{ a: [{ name: 'alpha' }], b: [{ name: 'alpha' }, { name: 'bravo' }] }] }, 'aliases of Post.labels with different limits, each answered with its own')
  t.same(errorCodes(await graphql(app, `{ post(id: "${posts[0]?.id}") { labels(limit: 101) { name } } }`, { headers: ann.headers })), ['BAD_USER_INPUT'])
  const costly = await graphql(app, '{ users(limit: 100) { posts(limit: 100) { labels(limit: 100) { name } } } }', { headers: ann.headers })
  t.same(errorCodes(costly), ['COMPLEXITY_LIMIT_EXCEEDED'], 'Post.labels counts as a list field')
  t.same(errorCodes(await graphql(app, '{ users { posts { labels { name } } } }')), ['UNAUTHENTICATED'])
})

t.test('inverse in GraphQL: owner read rules narrow to the caller\'s rows, and a public type asks for a token', async (t) => {
  const publicLabels = defineResource({ ...labels.declaration, auth: { ...labels.declaration.auth, read: 'public' } } as Parameters<typeof defineResource>[0])
  const { app, ann, bob, asAnn, asBob, posts: [one], labels: [alpha] } = await labelledPosts(t, { resources: [publicLabels, notes] })
  const first = body<{ id: number }>(await asAnn('POST', '/notes', { post_id: one?.id, label_id: alpha?.id, text: 'ann' }))
  t.equal((await asBob('POST', '/notes', { post_id: one?.id, label_id: alpha?.id, reply_to: first.id, text: 'bob' })).statusCode, 422, 'not a reply to a note Bob cannot read')
  // One made otherwise (before the note was Ann's) stays his.
  await sql`insert into notes (owner_id, post_id, label_id, reply_to, text) values (${bob.id}, ${one?.id}, ${alpha?.id}, ${first.id}, 'bob')`.execute(app.db)
  const query = `{ post(id: "${one?.id}") { notes { text } } label(id: "${alpha?.id}") { notes { text parent { text } } } users { name notes { text } } notes { text parent { text } } }`
  t.same((await graphql(app, query, { headers: ann.headers })).data, {
    post: { notes: [{ text: 'ann' }] },
    label: { notes: [{ text: 'ann', parent: null }] },
    users: [{ name: 'Ann', notes: [{ text: 'ann' }] }, { name: 'Bob', notes: [] }],
    notes: [{ text: 'ann', parent: null }]
  })
  t.same((await graphql(app, query, { headers: bob.headers })).data, {
    post: { notes: [{ text: 'bob' }] },
    label: { notes: [{ text: 'bob', parent: null }] },
    users: [{ name: 'Ann', notes: [] }, { name: 'Bob', notes: [{ text: 'bob' }] }],
    notes: [{ text: 'bob', parent: null }]
  }, 'Ann\'s note is not Bob\'s to see, even as the one his replies')
  const comment = body<{ id: number }>(await asBob('POST', `/posts/${one?.id}/comments`, { text: 'nice' }))
  await asAnn('POST', '/notes', { post_id: one?.id, comment_id: comment.id, text: 'ann on the comment' })
  const onComments = await graphql(app, `{ post(id: "${one?.id}") { comments { text notes { text } } } }`, { headers: ann.headers })
  t.same(onComments.data, { post: { comments: [{ text: 'nice', notes: [{ text: 'ann on the comment' }] }] } }, 'Comment.notes below a built-in relation')
  t.same((await graphql(app, '{ labels { name } }')).data, { labels: [{ name: 'alpha' }, { name: 'bravo' }, { name: 'charlie' }] }, 'anyone reads the labels')
  t.same(errorCodes(await graphql(app, '{ labels { notes { text } } }')), ['UNAUTHENTICATED'], 'but not their notes')
})
