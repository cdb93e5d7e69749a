// The profiles' declaration (rules/profiles.ts) in GraphQL, which profiles lacked before: the profile
// of a user, its update under the rules of REST, and `User.profile` below any list of users.
import t from 'tap'
import { adminToken, apiClient, build, errorCodes, graphql, testDb } from '../helpers/app.js'
import { signedIn } from '../helpers/app.js'
import { recordSql } from '../helpers/sql-log.js'

t.test('profile(userId) and updateProfile: the user or an administrator, as in REST', async (t) => {
  const app = await build(t)
  const ann = await signedIn(app, { name: 'Ann' })
  const bob = await signedIn(app, { name: 'Bob' })
  const admin = await adminToken(app)
  const before = await graphql(app, `{ profile(userId: "${ann.id}") { userId bio updatedAt } }`, { headers: bob.headers })
  t.match(before.data, { profile: { userId: String(ann.id), bio: null } })

  const changed = await graphql(app, `mutation { updateProfile(userId: "${ann.id}", input: { bio: "Engines", location: "London" }) { userId bio avatarUrl location updatedAt } }`, { headers: ann.headers })
  t.match(changed.data, { updateProfile: { userId: String(ann.id), bio: 'Engines', avatarUrl: null, location: 'London' } })
  t.ok(changed.data?.updateProfile.updatedAt > before.data?.profile.updatedAt, 'updated_at moves')
  const rest = await apiClient(app, bob.headers)('GET', `/users/${ann.id}/profile`)
  t.match(JSON.parse(rest.body), { bio: 'Engines', location: 'London' }, 'the same row as REST')

  t.same(errorCodes(await graphql(app, `mutation { updateProfile(userId: "${ann.id}", input: { bio: "hacked" }) { bio } }`, { headers: bob.headers })), ['FORBIDDEN'])
  t.same(errorCodes(await graphql(app, 'mutation { updateProfile(userId: "999", input: { bio: "x" }) { bio } }', { headers: bob.headers })), ['FORBIDDEN'], 'another user\'s, existing or not')
  t.match((await graphql(app, 'mutation { updateProfile(userId: "999", input: { bio: "x" }) { bio } }', { headers: admin })).errors, [{ message: 'user not found', extensions: { code: 'NOT_FOUND' } }])
  t.match((await graphql(app, `mutation { updateProfile(userId: "${ann.id}", input: { avatarUrl: "ftp://x" }) { bio } }`, { headers: admin })).errors, [{ extensions: { code: 'BAD_USER_INPUT' } }], 'the REST body\'s checks')
  t.match((await graphql(app, `mutation { updateProfile(userId: "${ann.id}", input: { location: "Paris" }) { bio location } }`, { headers: admin })).data, { updateProfile: { bio: 'Engines', location: 'Paris' } })
  t.same((await graphql(app, '{ profile(userId: "999") { bio } }', { headers: bob.headers })).data, { profile: null })
  t.same(errorCodes(await graphql(app, `{ profile(userId: "${ann.id}") { bio } }`)), ['UNAUTHENTICATED'])
  t.same(errorCodes(await graphql(app, '{ profiles { bio } }', { headers: bob.headers })), ['GRAPHQL_VALIDATION_FAILED'], 'no list, create or delete')
})

t.test('User.profile below users: one statement for the profiles of a whole level', async (t) => {
  const recorded = recordSql(await testDb())
  const app = await build(t, { db: recorded.db })
  const ann = await signedIn(app, { name: 'Ann' })
  await signedIn(app, { name: 'Bob' })
  await apiClient(app, ann.headers)('PATCH', `/users/${ann.id}/profile`, { location: 'London' })
  recorded.statements.length = 0
  const res = await graphql(app, '{ users { name profile { location } } }', { headers: ann.headers })
  t.equal(res.errors, undefined)
  t.same(res.data, { users: [{ name: 'Ann', profile: { location: 'London' } }, { name: 'Bob', profile: { location: null } }] })
  const ours = recorded.statements.filter((statement) => !/revoked_tokens|persisted_queries|login_failures/.test(statement))
  t.equal(ours.length, 1, `the users and their profiles in one statement, whose text is the answer: ${ours.join(' | ')}`)
})
