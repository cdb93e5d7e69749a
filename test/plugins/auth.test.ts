import { createHash, createHmac, randomUUID } from 'node:crypto'
import { Writable } from 'node:stream'
import Fastify, { type FastifyInstance } from 'fastify'
import t, { type Test } from 'tap'
import { ensureAdmin } from '../../db/auth.js'
import { revokeTokensOf } from '../../db/revoked-tokens.js'
import { hashPassword, verifyPassword } from '../../plugins/passwords.js'
import { openOutboxMessage } from '../../plugins/one-time-tokens.js'
import { REFRESH_MS, RevocationList } from '../../plugins/revocations.js'
import { serverOptions } from '../../plugins/server-options.js'
import tandem, { type TandemPluginOptions } from '../../app/tandem.js'
import { ADMIN, TEST_SECRET, adminToken, body, build, graphql, login, signUp, signedIn, testDb, type AuthHeaders } from '../helpers/app.js'

const b64 = (value: object | string): string => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')

/** A JWT made by hand, to send what the server would never sign. */
function handMade (payload: object, { secret = TEST_SECRET, header = { alg: 'HS256', typ: 'JWT' } as object } = {}): string {
  const unsigned = `${b64(header)}.${b64(payload)}`
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`
}

const now = () => Math.floor(Date.now() / 1000)
const claims = (extra: object = {}) => ({ sub: '1', role: 'user', jti: randomUUID(), iss: 'tandem', iat: now(), exp: now() + 600, ...extra })
const bearer = (token: string): AuthHeaders => ({ authorization: `Bearer ${token}` })
const decode = (token: string): Record<string, unknown> => JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString())

t.test('login answers a Bearer token that opens the protected routes', async (t) => {
  const app = await build(t)
  const me = await signUp(app, { email: 'Ada@Example.com' })
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'ada@example.com', password: me.password } })
  t.equal(res.statusCode, 200, 'emails compare case-insensitively')
  const token = body<{ accessToken: string, tokenType: string, expiresIn: number }>(res)
  t.same(Object.keys(token).sort(), ['accessToken', 'deviceToken', 'expiresIn', 'tokenType'])
  t.equal(token.tokenType, 'Bearer')
  t.equal(token.expiresIn, 900, 'the default lifetime, 15 minutes, in seconds')
  const payload = decode(token.accessToken)
  t.equal(payload.sub, String(me.id))
  t.equal(payload.role, 'user')
  t.type(payload.jti, 'string')
  t.equal((payload.exp as number) - (payload.iat as number), 900)
  t.notOk('password' in payload || 'email' in payload, 'nothing private in the token')
  const list = await app.inject({ url: '/api/v1/users', headers: bearer(token.accessToken) })
  t.equal(list.statusCode, 200)
  t.notMatch(list.body, /password|argon2/)
})

t.test('logout and password resets answer with an Idempotency-Key too; a login is never stored for replay', async (t) => {
  // They write through the token service, outside the request's transaction: on the embedded
  // database's one connection they must not wait for a transaction of their own.
  const app = await build(t)
  const user = await signUp(app)
  const post = (url: string, key: string, headers: Record<string, string> = {}, payload?: object) =>
    app.inject({ method: 'POST', url, headers: { ...headers, 'idempotency-key': key }, ...(payload === undefined ? {} : { payload }) })
  const credentials = { email: user.email, password: user.password }
  const first = await post('/api/v1/auth/login', 'login-1', {}, credentials)
  t.equal(first.statusCode, 200)
  const again = await post('/api/v1/auth/login', 'login-1', {}, credentials)
  t.equal(again.statusCode, 200)
  t.equal(again.headers['idempotent-replayed'], undefined, 'a second login runs again')
  t.not(body(again).accessToken, body(first).accessToken, 'and gets a token of its own')
  const stored = await app.db.selectFrom('idempotency_keys').select('body').execute()
  t.notOk(stored.some((row) => row.body?.includes(body<{ accessToken: string }>(first).accessToken)), 'no access token in the idempotency store')
  const bearer = { authorization: `Bearer ${body<{ accessToken: string }>(first).accessToken}` }
  t.equal((await post('/api/v1/auth/logout', 'logout-1', bearer)).statusCode, 204)
  t.equal((await post(`/api/v1/users/${user.id}/reset-password`, 'reset-1', (await login(app, user.email, user.password)))).statusCode, 202)
  t.equal((await post('/api/v1/auth/reset-password', 'reset-2', {}, { token: 'not-a-token-at-all-but-long-enough', password: 'another-password' })).statusCode, 400)
})

t.test('jwtExpiresIn sets the lifetime', async (t) => {
  const app = await build(t, { jwtExpiresIn: '2h' })
  const me = await signUp(app)
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: me.email, password: me.password } })
  t.equal(body(res).expiresIn, 7200)
})

t.test('a wrong password, an unknown email and an account without a password all get the same 401', async (t) => {
  const app = await build(t)
  const me = await signUp(app)
  await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'No password', email: 'nopass@example.com' } })
  const answers = []
  for (const payload of [
    { email: me.email, password: 'wrong password' },
    { email: 'nobody@example.com', password: me.password },
    { email: 'nopass@example.com', password: 'anything at all' }
  ]) {
    const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload })
    t.equal(res.statusCode, 401, payload.email)
    t.equal(res.headers['www-authenticate'], 'Bearer')
    answers.push(res.body)
  }
  t.same(new Set(answers).size, 1, 'one answer for all three')
  t.same(JSON.parse(answers[0] ?? '{}'), { error: 'invalid email or password' })
  const invalid = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: me.email } })
  t.equal(invalid.statusCode, 400)
  t.equal(body(invalid).field, 'password')
})

t.test('tokens that are missing, malformed, expired, forged or unsigned are 401 with WWW-Authenticate: Bearer', async (t) => {
  const app = await build(t)
  const cases: Array<[string, Record<string, string>]> = [
    ['missing', {}],
    ['not Bearer', { authorization: `Basic ${b64('ada:secret')}` }],
    ['Bearer without a token', { authorization: 'Bearer' }],
    ['two tokens', { authorization: `Bearer ${handMade(claims())} ${handMade(claims())}` }],
    ['not a JWT', { authorization: 'Bearer not-a-jwt' }],
    ['expired', bearer(handMade(claims({ iat: now() - 3600, exp: now() - 60 })))],
    ['signed with another secret', bearer(handMade(claims(), { secret: 'another-secret-that-is-long-enough' }))],
    ['alg none', { authorization: `Bearer ${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims({ role: 'admin' }))}.` }],
    ['alg HS512', bearer(handMade(claims(), { header: { alg: 'HS512', typ: 'JWT' } }))],
    ['payload changed after signing', bearer(handMade(claims()).replace(/\.[^.]+\./, `.${b64(claims({ role: 'admin' }))}.`))],
    ['no jti', bearer(handMade(claims({ jti: undefined })))],
    ['another issuer', bearer(handMade(claims({ iss: 'someone-else' })))],
    ['a sub that is no user id', bearer(handMade(claims({ sub: 'ada' })))],
    ['an unknown role', bearer(handMade(claims({ role: 'root' })))]
  ]
  for (const [name, headers] of cases) {
    const res = await app.inject({ url: '/api/v1/users', headers })
    t.equal(res.statusCode, 401, name)
    t.equal(res.headers['www-authenticate'], 'Bearer', name)
    t.match(res.headers['content-type'], /^application\/json/, name)
    t.same(Object.keys(body(res)), ['error'], name)
  }
  const expired = await app.inject({ url: '/api/v1/users', headers: bearer(handMade(claims({ exp: now() - 1 }))) })
  t.same(body(expired), { error: 'token expired' })
  t.equal((await app.inject({ url: '/api/v1/users', headers: bearer(handMade(claims())) })).statusCode, 200, 'a well-made token passes')
  t.equal((await app.inject({ url: '/api/v1/users', headers: { authorization: `bearer ${handMade(claims())}` } })).statusCode, 200, 'the scheme is case-insensitive')
})

t.test('logout revokes that token at once, and only that one', async (t) => {
  const app = await build(t)
  const me = await signedIn(app)
  const second = await login(app, me.email, me.password)
  const logout = await app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: me.headers })
  t.equal(logout.statusCode, 204)
  t.equal(logout.body, '')
  const reuse = await app.inject({ url: '/api/v1/users', headers: me.headers })
  t.equal(reuse.statusCode, 401)
  t.equal(reuse.headers['www-authenticate'], 'Bearer')
  t.same(body(reuse), { error: 'token revoked' })
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: me.headers })).statusCode, 401, 'logging out twice is 401')
  t.equal((await app.inject({ url: '/api/v1/users', headers: second })).statusCode, 200, 'the other session still works')
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/logout' })).statusCode, 401, 'logout needs a token')
  const jti = decode(me.headers.authorization.slice(7)).jti as string
  const row = await app.db.selectFrom('revoked_tokens').selectAll().where('jti', '=', jti).executeTakeFirst()
  t.ok(row, 'the revocation is in PostgreSQL')
})

/** A second instance of Tandem over the test database, as another process would run it. */
async function secondInstance (t: Test, options: TandemPluginOptions = {}): Promise<FastifyInstance> {
  const other = Fastify(serverOptions({ logLevel: 'silent' }))
  await other.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET, rootHandlers: true, ...options })
  await other.ready()
  t.teardown(() => other.close())
  return other
}

/** How `app` answers a list request with `headers` once it stops answering 200 (polling up to 3 s), and after how long. */
async function onceRefused (app: FastifyInstance, headers: AuthHeaders): Promise<{ status: number, ms: number }> {
  const started = Date.now()
  let status = 200
  while (status === 200 && Date.now() - started < 3000) {
    await new Promise((resolve) => setTimeout(resolve, 50))
    status = (await app.inject({ url: '/api/v1/users', headers })).statusCode
  }
  return { status, ms: Date.now() - started }
}

t.test('a token revoked on one instance is refused by another within about a second', async (t) => {
  const a = await build(t)
  const b = await secondInstance(t)
  const me = await signedIn(a)
  t.equal((await b.inject({ url: '/api/v1/users', headers: me.headers })).statusCode, 200, 'the other instance accepts the token')
  t.equal((await a.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: me.headers })).statusCode, 204)
  const { status, ms } = await onceRefused(b, me.headers)
  t.equal(status, 401, 'refused on the other instance')
  t.ok(ms < 2000, `within ${ms} ms`)
})

t.test('the admin of adminEmail/adminPassword is created at start; a new ADMIN_PASSWORD ends its sessions', async (t) => {
  const first = await build(t, { adminEmail: 'Boss@Example.com', adminPassword: 'first-password' })
  const headers = await login(first, 'boss@example.com', 'first-password')
  t.equal(decode(headers.authorization.slice(7)).role, 'admin')
  const other = await signUp(first)
  t.equal((await first.inject({ method: 'PATCH', url: `/api/v1/users/${other.id}`, headers, payload: { name: 'Renamed by admin' } })).statusCode, 200)
  t.equal((await first.inject({ method: 'DELETE', url: `/api/v1/users/${other.id}`, headers })).statusCode, 204)

  const unchanged = await secondInstance(t, { adminEmail: 'boss@example.com', adminPassword: 'first-password' })
  t.equal((await unchanged.inject({ url: '/api/v1/users', headers })).statusCode, 200, 'the same password again: sessions go on')

  const rotated = await secondInstance(t, { adminEmail: 'boss@example.com', adminPassword: 'rotated-password' })
  t.equal((await rotated.inject({ url: '/api/v1/users', headers })).statusCode, 401, 'a rotated password ends the earlier tokens')
  t.equal((await onceRefused(first, headers)).status, 401, 'on the other instance too')
  t.equal((await first.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'boss@example.com', password: 'first-password' } })).statusCode, 401, 'the old password no longer works')
  t.equal((await first.inject({ url: '/api/v1/users', headers: await login(first, 'boss@example.com', 'rotated-password') })).statusCode, 200)
})

t.test('regression: instances starting together on a new database with adminEmail failed on the unique email; now one creates it', async (t) => {
  const app = await build(t)
  const password = { hash: async () => hashPassword('together-password'), matches: async (stored: string | null) => verifyPassword(stored, 'together-password') }
  const outcomes = await Promise.all([1, 2, 3].map(async () => ensureAdmin(app.db, 'together@example.com', password, app.accessTokens.newTokensExpireAt())))
  t.same(outcomes.sort(), ['created', 'unchanged', 'unchanged'])
  const rows = await app.db.selectFrom('users').select(['role']).where('email', '=', 'together@example.com').execute()
  t.same(rows, [{ role: 'admin' }], 'one administrator')
})

t.test('regression: adminEmail of a self-registered account promoted it; now the start stops', async (t) => {
  const app = await build(t)
  const user = await signedIn(app, { email: 'chief@example.com' })
  const takeover = Fastify(serverOptions({ logLevel: 'silent' }))
  t.teardown(() => takeover.close())
  await t.rejects(async () => {
    await takeover.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET, rootHandlers: true, adminEmail: 'Chief@example.com', adminPassword: 'second-password' })
    await takeover.ready()
  }, { name: 'ConfigError', message: /adminEmail Chief@example.com belongs to an account that is not an administrator/ })
  const row = await app.db.selectFrom('users').select(['role']).where('id', '=', user.id).executeTakeFirstOrThrow()
  t.equal(row.role, 'user', 'not promoted')
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: user.email, password: 'second-password' } })
  t.equal(res.statusCode, 401, 'the configured password does not open the account')
  t.equal(decode(user.headers.authorization.slice(7)).role, 'user')
})

const outbox = async (app: Awaited<ReturnType<typeof build>>, kind: string) => {
  const row = await app.db.selectFrom('email_outbox').selectAll().where('kind', '=', kind).orderBy('id', 'desc').executeTakeFirstOrThrow()
  return { ...row, body: openOutboxMessage(row, TEST_SECRET) }
}
const tokenIn = (text: string): string => /^([A-Za-z0-9_-]{43})$/m.exec(text)?.[1] ?? ''

t.test('verify-email: 202, a one-time token in the outbox, stored hashed; using it sets email_verified_at; once', async (t) => {
  const app = await build(t)
  const me = await signedIn(app)
  const res = await app.inject({ method: 'POST', url: `/api/v1/users/${me.id}/verify-email`, headers: me.headers })
  t.equal(res.statusCode, 202)
  t.same(body(res), { status: 'queued' })
  const mail = await outbox(app, 'verify_email')
  t.equal(mail.recipient, me.email)
  const token = tokenIn(mail.body)
  t.equal(token.length, 43, 'the message carries the token')
  const stored = await app.db.selectFrom('user_tokens').selectAll().executeTakeFirstOrThrow()
  t.equal(stored.token_hash, createHash('sha256').update(token).digest('hex'), 'only its sha256 is stored')
  t.equal(stored.user_id, me.id)
  t.ok(stored.expires_at > new Date(), 'with an expiry')

  const use = await app.inject({ method: 'POST', url: '/api/v1/auth/verify-email', payload: { token } })
  t.equal(use.statusCode, 204)
  const user = await app.db.selectFrom('users').select('email_verified_at').where('id', '=', me.id).executeTakeFirstOrThrow()
  t.type(user.email_verified_at, Date)

  const reuse = await app.inject({ method: 'POST', url: '/api/v1/auth/verify-email', payload: { token } })
  t.equal(reuse.statusCode, 400)
  t.same(body(reuse), { error: 'token is invalid, used or expired', field: 'token' })
  const unknown = await app.inject({ method: 'POST', url: '/api/v1/auth/verify-email', payload: { token: 'x'.repeat(43) } })
  t.equal(unknown.statusCode, 400)
  t.equal(body(unknown).field, 'token')
  const missing = await app.inject({ method: 'POST', url: '/api/v1/auth/verify-email', payload: {} })
  t.equal(body(missing).field, 'token')
})

t.test('an expired token, or one sent to an address the user no longer has, is 400', async (t) => {
  const app = await build(t)
  const me = await signedIn(app)
  await app.inject({ method: 'POST', url: `/api/v1/users/${me.id}/verify-email`, headers: me.headers })
  const token = tokenIn((await outbox(app, 'verify_email')).body)
  await app.db.updateTable('user_tokens').set({ expires_at: new Date(Date.now() - 1000) }).execute()
  const expired = await app.inject({ method: 'POST', url: '/api/v1/auth/verify-email', payload: { token } })
  t.equal(expired.statusCode, 400)
  t.equal(body(expired).field, 'token')

  await app.inject({ method: 'POST', url: `/api/v1/users/${me.id}/verify-email`, headers: me.headers })
  const fresh = tokenIn((await outbox(app, 'verify_email')).body)
  await app.inject({ method: 'PATCH', url: `/api/v1/users/${me.id}`, headers: me.headers, payload: { email: 'elsewhere@example.com', current_password: me.password } })
  const moved = await app.inject({ method: 'POST', url: '/api/v1/auth/verify-email', payload: { token: fresh } })
  t.equal(moved.statusCode, 400, 'the token verified the old address, not the new one')
})

t.test('reset-password: an admin sends a token, it sets the password, once; the account can then log in', async (t) => {
  const app = await build(t)
  const created = await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'No password', email: 'np@example.com' } })
  const id = body<{ id: number }>(created).id
  const admin = await adminToken(app)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'np@example.com', password: 'new-password' } })).statusCode, 401)

  const res = await app.inject({ method: 'POST', url: `/api/v1/users/${id}/reset-password`, headers: admin })
  t.equal(res.statusCode, 202)
  const mail = await outbox(app, 'reset_password')
  t.equal(mail.recipient, 'np@example.com')
  const token = tokenIn(mail.body)
  const stored = await app.db.selectFrom('user_tokens').select(['token_hash', 'kind']).executeTakeFirstOrThrow()
  t.same(stored, { token_hash: createHash('sha256').update(token).digest('hex'), kind: 'reset_password' })

  const short = await app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token, password: 'short' } })
  t.equal(short.statusCode, 400)
  t.equal(body(short).field, 'password')
  const wrongKind = await app.inject({ method: 'POST', url: '/api/v1/auth/verify-email', payload: { token } })
  t.equal(wrongKind.statusCode, 400, 'a reset token does not verify an email')

  const use = await app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token, password: 'new-password' } })
  t.equal(use.statusCode, 204)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'np@example.com', password: 'new-password' } })).statusCode, 200)
  const row = await app.db.selectFrom('users').select('password_hash').where('id', '=', id).executeTakeFirstOrThrow()
  t.match(row.password_hash, /^\$argon2id\$/)

  const reuse = await app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token, password: 'another-password' } })
  t.equal(reuse.statusCode, 400)
  t.equal(body(reuse).field, 'token')
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/users/999/reset-password', headers: admin })).statusCode, 404, 'an unknown user, for an admin')
})

t.test('a password reset revokes every token the user had, on this instance at once and on others within a second', async (t) => {
  const app = await build(t)
  const other = await secondInstance(t)
  const admin = await adminToken(app)
  const me = await signedIn(app, { email: 'reset-me@example.com' })
  const bystander = await signedIn(app, { email: 'bystander@example.com' })
  // Token times are whole seconds; tokens made earlier than the reset's second are revoked.
  await new Promise((resolve) => setTimeout(resolve, 1000 - (Date.now() % 1000) + 20))
  for (const instance of [app, other]) t.equal((await instance.inject({ url: '/api/v1/users', headers: me.headers })).statusCode, 200)

  t.equal((await app.inject({ method: 'POST', url: `/api/v1/users/${me.id}/reset-password`, headers: admin })).statusCode, 202)
  const token = tokenIn((await outbox(app, 'reset_password')).body)
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', payload: { token, password: 'brand-new-password' } })).statusCode, 204)

  const refused = await app.inject({ url: '/api/v1/users', headers: me.headers })
  t.equal(refused.statusCode, 401, 'refused at once by the instance that reset it')
  t.same(body(refused), { error: 'token revoked' })
  t.match((await graphql(app, '{ users(limit: 1) { id } }', { headers: me.headers })).errors, [{ message: 'token revoked', extensions: { code: 'UNAUTHENTICATED' } }])
  const { status, ms } = await onceRefused(other, me.headers)
  t.equal(status, 401, `refused by the other instance (after ${ms} ms)`)

  const fresh = await login(app, me.email, 'brand-new-password')
  t.equal((await app.inject({ url: '/api/v1/users', headers: fresh })).statusCode, 200, 'a token made after the reset works, even in the same second')
  t.equal((await other.inject({ url: '/api/v1/users', headers: fresh })).statusCode, 200)
  t.equal((await app.inject({ url: '/api/v1/users', headers: bystander.headers })).statusCode, 200, 'other users keep their tokens')
  const row = await app.db.selectFrom('revoked_tokens').select(['jti', 'expires_at']).where('jti', '=', `user:${me.id}`).executeTakeFirstOrThrow()
  t.ok(row.expires_at.getTime() > Date.now() + 14 * 60_000, 'kept until the last revoked token would have expired (15 minutes)')
})

t.test('passwords and tokens never reach the log', async (t) => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(String(chunk)); done() } })
  const options = serverOptions({ logLevel: 'trace' })
  const app = Fastify({ ...options, logger: { ...(options.logger as object), stream } })
  await app.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET, rootHandlers: true, adminEmail: ADMIN.email, adminPassword: 'bootstrap-secret-pw' })
  await app.ready()
  t.teardown(() => app.close())
  const password = 'a-very-secret-password'
  await app.inject({ method: 'POST', url: '/api/v1/users', payload: { name: 'Ada', email: 'logged@example.com', password } })
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'logged@example.com', password } })
  const token = body<{ accessToken: string }>(res).accessToken
  await app.inject({ url: '/api/v1/users', headers: bearer(token) })
  await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: 'logged@example.com', password: 'wrong-secret-password' } })
  const log = lines.join('')
  t.ok(lines.length > 5, 'something was logged')
  for (const secret of [password, 'wrong-secret-password', 'bootstrap-secret-pw', token, '$argon2id$']) t.notOk(log.includes(secret), `no ${secret.slice(0, 12)}… in the log`)
})

t.test('the revocation list asks PostgreSQL itself when its copy is stale', async (t) => {
  const app = await build(t)
  const list = new RevocationList(app.db, app.log, 900)
  await list.start()
  t.teardown(() => list.close())
  const token = { jti: randomUUID(), sub: 7, ver: 0 }
  await app.db.insertInto('revoked_tokens').values({ jti: token.jti, expires_at: new Date(Date.now() + 60_000) }).execute()
  t.equal(await list.has(token), false, 'a fresh copy is trusted until the next poll')
  t.equal(await list.has(token, Date.now() + 10 * REFRESH_MS), true, 'a stale one is not')
  await list.refresh()
  t.equal(await list.has(token), true, 'the poll brings it in')

  // Every token of a user below their new token version.
  const user = await signUp(app, { email: 'versioned@example.com' })
  const other = await signUp(app, { email: 'unversioned@example.com' })
  const older = { jti: randomUUID(), sub: user.id, ver: 0 }
  const otherUser = { jti: randomUUID(), sub: other.id, ver: 0 }
  await revokeTokensOf(app.db, user.id, new Date(Date.now() + 60_000))
  const { token_version: version } = await app.db.selectFrom('users').select('token_version').where('id', '=', user.id).executeTakeFirstOrThrow()
  t.equal(version, 1, 'the user\'s token version went up')
  const newer = { jti: randomUUID(), sub: user.id, ver: version }
  t.equal(await list.has(older), false, 'fresh copy')
  t.equal(await list.has(older, Date.now() + 10 * REFRESH_MS), true, 'stale copy: PostgreSQL says the older token is revoked')
  t.equal(await list.has(newer, Date.now() + 10 * REFRESH_MS), false, 'and one of the new version is not')
  t.equal(await list.has(otherUser, Date.now() + 10 * REFRESH_MS), false, 'nor another user\'s')
  await list.refresh()
  t.same([await list.has(older), await list.has(newer), await list.has(otherUser)], [true, false, false], 'the poll brings it in')
})

t.test('a token that passed while valid is refused once it expires (verified tokens are remembered only until their expiry)', async (t) => {
  const app = await build(t)
  // Valid for a few seconds: enough for three requests on a busy machine (exp is in whole seconds).
  const exp = now() + 5
  const token = handMade(claims({ exp }))
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ url: '/api/v1/users', headers: bearer(token) })
    // Only a use that was certainly before the expiry must pass.
    if (now() < exp) t.equal(res.statusCode, 200, `use ${i + 1} while valid`)
  }
  await new Promise((resolve) => setTimeout(resolve, (exp + 1) * 1000 - Date.now()))
  const late = await app.inject({ url: '/api/v1/users', headers: bearer(token) })
  t.equal(late.statusCode, 401)
  t.same(body(late), { error: 'token expired' })
})

t.test('regression: a route that asked for a rule before the auth plugin was registered was served to anyone', async (t) => {
  const db = await testDb()
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  app.get('/early', { config: { auth: 'admin' } }, async () => ({ secret: 'leaked' }))
  app.get('/early-unknown', { config: { auth: 'nobody' as never } }, async () => ({ secret: 'leaked' }))
  app.get('/public', async () => ({ open: true }))
  await app.register(tandem, { db, jwtSecret: TEST_SECRET, rootHandlers: true })
  app.get('/late', { config: { auth: 'admin' } }, async () => ({ secret: 'kept' }))
  await app.ready()
  t.teardown(() => app.close())
  const admin = { authorization: `Bearer ${app.accessTokens.issue({ id: 1, role: 'admin' }).accessToken}` }

  for (const url of ['/early', '/early-unknown']) {
    for (const headers of [{}, admin]) {
      const res = await app.inject({ url, headers })
      t.equal(res.statusCode, 500, `${url} ${'authorization' in headers ? 'as admin' : 'anonymous'}: refused`)
      t.notMatch(res.body, /leaked/, 'the handler did not run (the answer is the host\'s error handler\'s: the route came before Tandem\'s)')
    }
  }
  t.equal((await app.inject({ url: '/public' })).statusCode, 200, 'a route without a rule is not touched')
  t.equal((await app.inject({ url: '/late' })).statusCode, 401, 'a route added after the plugin is guarded as before')
  t.same(body(await app.inject({ url: '/late', headers: admin })), { secret: 'kept' })
})
