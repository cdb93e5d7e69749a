import { randomInt } from 'node:crypto'
import type { FastifyInstance, InjectOptions } from 'fastify'
import t from 'tap'
import { LOGIN_FAILURES_PER_ACCOUNT } from '../../plugins/auth.js'
import { LOGIN_LIMITS } from '../../plugins/rate-limit.js'
import { authHeaders, body, build, signUp } from '../helpers/app.js'

const randomIp = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
const call = (app: FastifyInstance, options: InjectOptions = {}) => app.inject({ url: '/api/v1/users', ...options })

t.test('rateLimitMax per window: draft RateLimit-* headers, then 429 with Retry-After and the error body', async (t) => {
  const app = await build(t, { rateLimitMax: 3 })
  for (const remaining of [2, 1, 0]) {
    const res = await call(app)
    t.equal(res.statusCode, 401, 'counted whatever the answer')
    t.equal(res.headers['ratelimit-limit'], '3')
    t.equal(res.headers['ratelimit-remaining'], String(remaining))
    t.ok(Number(res.headers['ratelimit-reset']) > 0 && Number(res.headers['ratelimit-reset']) <= 60)
  }
  const limited = await call(app)
  t.equal(limited.statusCode, 429)
  t.match(limited.headers['content-type'], /^application\/json/)
  t.same(Object.keys(body(limited)), ['error'])
  t.match(body(limited).error, /rate limit exceeded/)
  const retryAfter = Number(limited.headers['retry-after'])
  t.ok(retryAfter > 0 && retryAfter <= 60, `Retry-After ${retryAfter} s`)
  t.equal(limited.headers['ratelimit-limit'], '3')
  t.equal(limited.headers['ratelimit-remaining'], '0')
  t.equal(limited.headers['x-ratelimit-limit'], undefined, 'only the draft names')

  t.equal((await call(app, { url: '/api/v1/nope' })).statusCode, 429, 'unknown routes under /api count too')
  t.equal((await call(app, { remoteAddress: '192.0.2.7' })).statusCode, 401, 'another IP has its own quota')
  for (const url of ['/health', '/ready']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200, `${url} is never limited`)
    t.equal(res.headers['ratelimit-limit'], undefined)
  }
})

t.test('a signed-in caller counts against its user id, never against the IP', async (t) => {
  const app = await build(t, { rateLimitMax: 3 })
  const ada = await authHeaders(app, { id: 1 })
  const grace = await authHeaders(app, { id: 2 })
  for (let i = 0; i < 3; i++) await call(app)
  t.equal((await call(app)).statusCode, 429, 'the anonymous quota of this IP is spent')
  for (let i = 0; i < 3; i++) t.equal((await call(app, { headers: ada })).statusCode, 200, 'but a signed-in caller of the same IP is not affected')
  const adaLimited = await call(app, { headers: ada })
  t.equal(adaLimited.statusCode, 429, 'until its own quota is spent')
  t.equal((await call(app, { headers: ada, remoteAddress: '192.0.2.8' })).statusCode, 429, 'from any IP')
  t.equal((await call(app, { headers: await authHeaders(app, { id: 1 }) })).statusCode, 429, 'with any token of that user')
  t.equal((await call(app, { headers: grace })).statusCode, 200, 'another user has its own quota')
  t.equal((await call(app, { remoteAddress: '192.0.2.9' })).statusCode, 401, 'and another IP its anonymous one')
  t.equal((await call(app, { headers: { authorization: 'Bearer forged.token.here' }, remoteAddress: '192.0.2.10' })).statusCode, 401)
  t.equal((await call(app, { remoteAddress: '192.0.2.10' })).statusCode, 401, 'an invalid token counts against the IP')
  t.equal((await call(app, { remoteAddress: '192.0.2.10' })).statusCode, 401)
  t.equal((await call(app, { remoteAddress: '192.0.2.10' })).statusCode, 429)
})

t.test('regression: a revoked token spent its owner\'s quota; now it counts as anonymous, by address', async (t) => {
  const app = await build(t, { rateLimitMax: 3 })
  const me = await signUp(app)
  const login = async () => ({ authorization: `Bearer ${body<{ accessToken: string }>(await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email: me.email, password: me.password } })).accessToken}` })
  const stolen = await login()
  t.equal((await app.inject({ method: 'POST', url: '/api/v1/auth/logout', headers: stolen })).statusCode, 204)
  const thief = '192.0.2.30'
  const answers = []
  for (let i = 0; i < 4; i++) answers.push((await call(app, { headers: stolen, remoteAddress: thief })).statusCode)
  t.same(answers, [401, 401, 401, 429], 'the thief spends the anonymous quota of their address')
  t.equal((await call(app, { headers: await login(), remoteAddress: '192.0.2.31' })).statusCode, 200, 'the owner\'s new session keeps its quota')
})

t.test('the window comes from rateLimitWindow', async (t) => {
  const app = await build(t, { rateLimitMax: 1, rateLimitWindow: '1 second' })
  t.equal((await call(app)).statusCode, 401)
  const limited = await call(app)
  t.equal(limited.statusCode, 429)
  t.equal(limited.headers['retry-after'], '1')
  await new Promise((resolve) => setTimeout(resolve, 1100))
  t.equal((await call(app)).statusCode, 401, 'a new window, a new quota')
})

t.test('login is limited per IP and account: brute force gets 429 even with the right password', async (t) => {
  const app = await build(t)
  const me = await signUp(app)
  const attempt = (email: string, password: string, remoteAddress = '127.0.0.1') =>
    app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password }, remoteAddress })
  for (let i = 0; i < LOGIN_LIMITS.perAccount; i++) t.equal((await attempt(me.email, `guess ${i}`)).statusCode, 401)
  const limited = await attempt(me.email.toUpperCase(), me.password)
  t.equal(limited.statusCode, 429, 'the right password too, in any case')
  t.match(body(limited).error, /rate limit exceeded/)
  t.equal(limited.headers['ratelimit-limit'], String(LOGIN_LIMITS.perAccount))
  t.ok(Number(limited.headers['retry-after']) > 0)
  t.equal((await attempt(me.email, me.password, '192.0.2.20')).statusCode, 200, 'the account from another IP')
  t.equal((await attempt('someone@example.com', 'guess')).statusCode, 401, 'another account from this IP')

  // Many accounts from one IP: the per-IP login limit.
  const ip = '192.0.2.21'
  for (let i = 0; i < LOGIN_LIMITS.perIp; i++) await attempt(`user${i}@example.com`, 'guess', ip)
  t.equal((await attempt(me.email, me.password, ip)).statusCode, 429)
  t.equal((await call(app, { remoteAddress: ip })).statusCode, 401, 'the rest of the API is not affected')
})

t.test('login is limited per account across all addresses: 20 failures in 15 minutes, then 429', async (t) => {
  const app = await build(t)
  const me = await signUp(app)
  const attempt = (email: string, password: string, remoteAddress: string) =>
    app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password }, remoteAddress })
  for (let i = 0; i < LOGIN_FAILURES_PER_ACCOUNT.failures; i++) t.equal((await attempt(me.email, `guess ${i}`, randomIp())).statusCode, 401)
  const limited = await attempt(me.email.toUpperCase(), me.password, randomIp())
  t.equal(limited.statusCode, 429, 'from yet another address, with the right password')
  t.ok(Number(limited.headers['retry-after']) > 800 && Number(limited.headers['retry-after']) <= 900, `Retry-After ${String(limited.headers['retry-after'])}`)
  const other = await signUp(app)
  t.equal((await attempt(other.email, other.password, randomIp())).statusCode, 200, 'other accounts are not affected')
  await app.db.updateTable('login_failures').set({ failed_at: new Date(Date.now() - 16 * 60_000) } as never).execute()
  t.equal((await attempt(me.email, me.password, randomIp())).statusCode, 200, 'failures older than the window no longer count')
})

const redisUrl = process.env.REDIS_URL_TEST
t.test('two instances sharing Redis enforce one limit', { skip: redisUrl === undefined || redisUrl === '' ? 'REDIS_URL_TEST is not set' : false }, async (t) => {
  const a = await build(t, { rateLimitMax: 3, redisUrl })
  const b = await build(t, { rateLimitMax: 3, redisUrl })
  const remoteAddress = randomIp()
  const answers = []
  for (const app of [a, b, a, b]) answers.push((await call(app, { remoteAddress })).statusCode)
  t.same(answers, [401, 401, 401, 429])
  const last = await call(a, { remoteAddress })
  t.equal(last.headers['ratelimit-remaining'], '0')
  t.equal(last.statusCode, 429)
})

t.test('an unreachable redisUrl stops the start with a clear error', async (t) => {
  await t.rejects(build(t, { redisUrl: 'redis://127.0.0.1:1' }), /cannot connect to Redis/)
})
