// Issue 37, finding 5: 20 failed logins for an email, from any addresses, refused even the right
// password for 15 minutes, so anyone could keep an account's owner out. A client that signed in to
// the account before presents the device token of that sign-in (OWASP's device cookies) and is let
// in; its own failures count against that token; everyone else is still held to the account's limit.
import { randomInt } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { LOGIN_FAILURES_PER_ACCOUNT } from '../../plugins/auth.js'
import { deviceTokens } from '../../plugins/device-tokens.js'
import { LOGIN_LIMITS } from '../../plugins/rate-limit.js'
import { body, build, errorCodes, graphql, signUp } from '../helpers/app.js'

const randomIp = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

interface LoginAnswer { accessToken: string, tokenType: string, expiresIn: number, deviceToken: string }

const attempt = (app: FastifyInstance, payload: { email: string, password: string, deviceToken?: string }, remoteAddress = randomIp()) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/login', payload, remoteAddress })

/** Fails the logins left of the account's budget (`spent` already are), each from an address of its own. */
async function lockOut (app: FastifyInstance, email: string, spent = 0): Promise<void> {
  for (let i = spent; i < LOGIN_FAILURES_PER_ACCOUNT.failures; i++) {
    const res = await attempt(app, { email, password: `guess ${i}` })
    if (res.statusCode !== 401) throw new Error(`a guess answered ${res.statusCode}`)
  }
}

t.test('REST: a client that signed in before gets in while failures from elsewhere lock the account', async (t) => {
  const app = await build(t, { loginDeviceFailures: 3 })
  const me = await signUp(app)
  const first = await attempt(app, { email: me.email, password: me.password })
  t.equal(first.statusCode, 200)
  const { deviceToken } = body<LoginAnswer>(first)
  t.match(deviceToken, /^\d+\.\d+\.[\w-]+\.[\w-]+$/, 'a sign-in answers a device token')

  await lockOut(app, me.email)
  t.equal((await attempt(app, { email: me.email, password: me.password })).statusCode, 429, 'an unknown client is refused, right password or not')
  const known = await attempt(app, { email: me.email.toUpperCase(), password: me.password, deviceToken })
  t.equal(known.statusCode, 200, 'the client with the device token of its earlier sign-in gets in')
  const fresh = body<LoginAnswer>(known).deviceToken
  t.not(fresh, deviceToken, 'and a new device token')
  t.ok(body<LoginAnswer>(known).accessToken)

  const other = await signUp(app)
  const othersToken = body<LoginAnswer>(await attempt(app, { email: other.email, password: other.password })).deviceToken
  const flipped = deviceToken.slice(0, -1) + (deviceToken.endsWith('A') ? 'B' : 'A')
  const [user, expires, nonce, mac] = deviceToken.split('.')
  const longer = [user, String(Number(expires) + 86_400), nonce, mac].join('.')
  for (const [what, token] of [['forged', flipped], ['re-dated', longer], ['another account\'s', othersToken], ['not one at all', 'x'], ['empty-looking', '...']] as const) {
    t.equal((await attempt(app, { email: me.email, password: me.password, deviceToken: token })).statusCode, 429, `a ${what} device token is no device token`)
  }
})

t.test('a device token signs no one in, and its failures count against it, not the account', async (t) => {
  const app = await build(t, { loginDeviceFailures: 3 })
  const me = await signUp(app)
  const { deviceToken } = body<LoginAnswer>(await attempt(app, { email: me.email, password: me.password }))
  for (let i = 0; i < 3; i++) t.equal((await attempt(app, { email: me.email, password: `wrong ${i}`, deviceToken })).statusCode, 401, 'a wrong password with a device token is 401')
  t.same(await app.db.selectFrom('login_failures').select('email').execute(), [], 'not one failure of the account')
  const kept = await app.db.selectFrom('login_failures_by_device').select('device').execute()
  t.equal(kept.length, 3, 'three of the device token')
  const [, , nonce] = deviceToken.split('.')
  for (const { device } of kept) {
    t.match(device, /^[0-9a-f]{64}$/, 'a digest is kept')
    t.notOk(device.includes(nonce as string) || deviceToken.includes(device), 'never the token nor its nonce')
  }

  // Past its own limit the token is untrusted: its client is held to the account's limit like any other.
  t.equal((await attempt(app, { email: me.email, password: 'wrong again', deviceToken })).statusCode, 401)
  t.equal((await app.db.selectFrom('login_failures').select('email').execute()).length, 1, 'that failure is the account\'s')
  await lockOut(app, me.email, 1)
  t.equal((await attempt(app, { email: me.email, password: me.password, deviceToken })).statusCode, 429, 'an untrusted device token is refused with the account')
})

t.test('the per-address limits still apply to a client with a device token', async (t) => {
  const app = await build(t)
  const me = await signUp(app)
  const { deviceToken } = body<LoginAnswer>(await attempt(app, { email: me.email, password: me.password }))
  t.type(deviceToken, 'string')
  const ip = randomIp()
  for (let i = 0; i < LOGIN_LIMITS.perAccount; i++) t.equal((await attempt(app, { email: me.email, password: `wrong ${i}`, deviceToken }, ip)).statusCode, 401)
  t.equal((await attempt(app, { email: me.email, password: me.password, deviceToken }, ip)).statusCode, 429, 'attempts per address and account')
})

t.test('GraphQL: login takes and answers the device token, with the same rule', async (t) => {
  const app = await build(t, { loginDeviceFailures: 2 })
  const me = await signUp(app)
  const LOGIN = 'mutation ($email: String!, $password: String!, $deviceToken: String) { login(email: $email, password: $password, deviceToken: $deviceToken) { accessToken tokenType deviceToken } }'
  const login = (variables: Record<string, unknown>) => graphql<{ login: LoginAnswer | null }>(app, LOGIN, { variables, remoteAddress: randomIp() })
  const first = await login({ email: me.email, password: me.password })
  const deviceToken = first.data?.login?.deviceToken as string
  t.match(deviceToken, /^\d+\.\d+\.[\w-]+\.[\w-]+$/)

  await lockOut(app, me.email)
  t.same(errorCodes(await login({ email: me.email, password: me.password })), ['RATE_LIMITED'], 'an unknown client is refused')
  t.same(errorCodes(await login({ email: me.email, password: me.password, deviceToken: `${deviceToken}x` })), ['RATE_LIMITED'], 'an altered token is no token')
  const known = await login({ email: me.email, password: me.password, deviceToken })
  t.same(known.errors, undefined)
  t.equal(known.data?.login?.tokenType, 'Bearer', 'the known client gets in')
  t.same(errorCodes(await login({ email: me.email, password: 'wrong', deviceToken })), ['UNAUTHENTICATED'], 'the device token signs no one in')
  t.same(errorCodes(await login({ email: me.email, password: 'wrong', deviceToken })), ['UNAUTHENTICATED'])
  t.same(errorCodes(await login({ email: me.email, password: me.password, deviceToken })), ['RATE_LIMITED'], 'past loginDeviceFailures the token is untrusted')
  t.same(errorCodes(await login({ email: me.email, password: me.password, deviceToken: known.data?.login?.deviceToken })), [], 'the token of another sign-in has its own budget')
})

t.test('a device token is valid for its lifetime, for its account, under its server\'s secret', async (t) => {
  let now = Date.UTC(2026, 0, 1)
  const tokens = deviceTokens('a secret long enough for tests', 60, () => now)
  const token = tokens.issue(7)
  t.match(tokens.check(token, 7), /^[0-9a-f]{64}$/)
  t.equal(tokens.check(token, 8), undefined, 'another account')
  t.equal(deviceTokens('another secret, long enough', 60, () => now).check(token, 7), undefined, 'another server')
  t.equal(tokens.check(`${token}${'x'.repeat(200)}`, 7), undefined)
  now += 59_000
  t.ok(tokens.check(token, 7), 'still valid a second before it expires')
  now += 1_000
  t.equal(tokens.check(token, 7), undefined, 'expired')
})
