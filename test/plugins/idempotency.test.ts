// What an Idempotency-Key keeps at rest (CONTRACT §11): a fingerprint that is an HMAC under a key of
// the server's, without the body's passwords, so that no stored value tests a password guess faster
// than its argon2 hash allows; and answers without secrets. Each `regression:` test failed before its fix.
import { createHash } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { up as withdrawFingerprints } from '../../db/migrations/0014_idempotency_fingerprints.js'
import { openOutboxMessage } from '../../plugins/one-time-tokens.js'
import { TEST_SECRET, body, build, login, signedIn } from '../helpers/app.js'

const SIGN_UP = { name: 'Keyed', email: 'keyed@example.com' }
const FIRST = 'first password 1'
const SECOND = 'second password 2'

const signUp = (app: FastifyInstance, password: string, key = 'signup') => app.inject({
  method: 'POST', url: '/api/v1/users', remoteAddress: '198.51.100.20', headers: { 'idempotency-key': key }, payload: { ...SIGN_UP, password }
})
const storedKey = async (app: FastifyInstance, key = 'signup') =>
  app.db.selectFrom('idempotency_keys').selectAll().where('key', '=', key).executeTakeFirstOrThrow()
const sha256 = (text: string, encoding: 'base64url' | 'hex' = 'base64url') => createHash('sha256').update(text).digest(encoding)

t.test('regression: a sign-up\'s fingerprint was the plain sha256 of its body, password included; it is an HMAC under the server\'s key, without the password', async (t) => {
  const app = await build(t)
  t.equal((await signUp(app, FIRST)).statusCode, 201)
  const row = await storedKey(app)
  const bodies = [JSON.stringify({ ...SIGN_UP, password: FIRST }), JSON.stringify(SIGN_UP)]
  const fastHashes = [FIRST, ...bodies, ...bodies.map((text) => `POST /api/v1/users\n${text}`)].flatMap((text) => [sha256(text), sha256(text, 'hex')])
  t.notOk(fastHashes.includes(row.request_hash), 'no plain sha256 of the body, with or without the password')
  const stored = JSON.stringify(row)
  t.notOk(stored.includes(FIRST), 'the password is nowhere in the row')
  t.same(Object.keys(JSON.parse(row.body ?? '{}')).sort(), ['created_at', 'email', 'id', 'name'], 'the stored answer is the user, without a secret')

  // The same body under the same key, the account and its record gone: only the password differs.
  const again = async (password: string) => {
    await app.db.deleteFrom('idempotency_keys').execute()
    await app.db.deleteFrom('users').where('email', '=', SIGN_UP.email).execute()
    t.equal((await signUp(app, password)).statusCode, 201)
    return (await storedKey(app)).request_hash
  }
  t.equal(await again(SECOND), row.request_hash, 'another password: the same fingerprint, which tests no guess')
  t.equal(await again('a third password, much longer than the others'), row.request_hash, 'and another')

  // The same request on a server with another key: another fingerprint.
  const other = await build(t, { jwtSecret: 'another-secret-that-is-long-enough' })
  t.equal((await signUp(other, FIRST)).statusCode, 201)
  t.not((await storedKey(other)).request_hash, row.request_hash, 'the fingerprint depends on the server\'s key')
})

t.test('the same key with only another password is a retry: the first answer, and the first password stands', async (t) => {
  const app = await build(t)
  const first = await signUp(app, FIRST)
  const retried = await signUp(app, SECOND)
  t.same([retried.statusCode, retried.headers['idempotent-replayed'], retried.body], [201, 'true', first.body], 'replayed, not 422')
  t.equal((await app.db.selectFrom('users').select('id').where('email', '=', SIGN_UP.email).execute()).length, 1, 'one account')
  await t.resolves(login(app, SIGN_UP.email, FIRST), 'the first request\'s password')
  await t.rejects(login(app, SIGN_UP.email, SECOND), 'the retry changed nothing')
  const renamed = await app.inject({ method: 'POST', url: '/api/v1/users', remoteAddress: '198.51.100.20', headers: { 'idempotency-key': 'signup' }, payload: { ...SIGN_UP, name: 'Another name', password: FIRST } })
  t.same([renamed.statusCode, body(renamed).field], [422, 'Idempotency-Key'], 'any other field still makes another request')
})

t.test('regression: a password reset kept the new password under a fast hash; its fingerprint leaves it out too', async (t) => {
  const app = await build(t)
  const user = await signedIn(app)
  t.equal((await app.inject({ method: 'POST', url: `/api/v1/users/${user.id}/reset-password`, headers: user.headers })).statusCode, 202)
  const mail = await app.db.selectFrom('email_outbox').selectAll().where('kind', '=', 'reset_password').executeTakeFirstOrThrow()
  const token = /^([A-Za-z0-9_-]{43})$/m.exec(openOutboxMessage(mail, TEST_SECRET))?.[1] ?? ''
  const reset = (password: string) => app.inject({ method: 'POST', url: '/api/v1/auth/reset-password', headers: { 'idempotency-key': 'reset' }, payload: { token, password } })
  t.equal((await reset(FIRST)).statusCode, 204)
  const row = await storedKey(app, 'reset')
  t.notOk([sha256(JSON.stringify({ token, password: FIRST })), sha256(`POST /api/v1/auth/reset-password\n${JSON.stringify({ token, password: FIRST })}`)].includes(row.request_hash), 'no plain sha256 of the body')
  t.notOk(JSON.stringify(row).includes(FIRST), 'the password is nowhere in the row')
  const retried = await reset(SECOND)
  t.same([retried.statusCode, retried.headers['idempotent-replayed']], [204, 'true'], 'a retry with another password is the first answer')
  await t.resolves(login(app, user.email, FIRST), 'and the first password stands')
})

t.test('fingerprints stored before HMACs are withdrawn: such a key answers 422, never a second write', async (t) => {
  const app = await build(t)
  t.equal((await signUp(app, FIRST)).statusCode, 201)
  const plain = sha256(`POST /api/v1/users\n${JSON.stringify({ ...SIGN_UP, password: FIRST })}`)
  await app.db.updateTable('idempotency_keys').set({ request_hash: plain }).execute()
  await withdrawFingerprints(app.db)
  t.not((await storedKey(app)).request_hash, plain, 'the plain hash is gone')
  t.equal((await signUp(app, FIRST)).statusCode, 422)
  t.equal((await app.db.selectFrom('users').select('id').where('email', '=', SIGN_UP.email).execute()).length, 1, 'one account')
})
