// Failed sign-ins are counted against a budget (an account's, a device token's) that concurrent
// guesses must not overrun: each attempt is recorded before its password is checked, under a lock
// of its budget. Counted after the check, as before, a burst of guesses all read a count below the
// limit and all got their guess. PGlite runs one transaction at a time, so the race needs a real
// PostgreSQL server.
import { randomInt } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { LOGIN_FAILURES_PER_ACCOUNT } from '../../plugins/auth.js'
import { body, build, signUp } from '../helpers/app.js'
import { serverUrl } from '../helpers/database.js'

const skip = serverUrl() === undefined
  ? 'needs a real PostgreSQL (set DATABASE_URL): PGlite runs one transaction at a time, so these races cannot happen on it'
  : false

const randomIp = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
const attempt = (app: FastifyInstance, payload: { email: string, password: string, deviceToken?: string }) =>
  app.inject({ method: 'POST', url: '/api/v1/auth/login', payload, remoteAddress: randomIp() })

function tally (codes: number[]): Record<number, number> {
  const counts: Record<number, number> = {}
  for (const code of codes) counts[code] = (counts[code] ?? 0) + 1
  return counts
}

t.test('concurrent failed logins never overrun the account\'s budget', { skip }, async (t) => {
  const app = await build(t)
  const me = await signUp(app)
  const burst = 2 * LOGIN_FAILURES_PER_ACCOUNT.failures
  const codes = (await Promise.all(Array.from({ length: burst }, async (_, i) => attempt(app, { email: me.email, password: `guess ${i}` })))).map((res) => res.statusCode)
  t.same(tally(codes), { 401: LOGIN_FAILURES_PER_ACCOUNT.failures, 429: burst - LOGIN_FAILURES_PER_ACCOUNT.failures }, 'as many guesses as the budget, the rest refused')
  t.equal((await app.db.selectFrom('login_failures').select('id').execute()).length, LOGIN_FAILURES_PER_ACCOUNT.failures)
})

t.test('concurrent failed logins with a device token never overrun its budget, then spend the account\'s', { skip }, async (t) => {
  const app = await build(t, { loginDeviceFailures: 4 })
  const me = await signUp(app)
  const { deviceToken } = body<{ deviceToken: string }>(await attempt(app, { email: me.email, password: me.password }))
  const codes = (await Promise.all(Array.from({ length: 12 }, async (_, i) => attempt(app, { email: me.email, password: `guess ${i}`, deviceToken })))).map((res) => res.statusCode)
  t.same(tally(codes), { 401: 12 })
  t.equal((await app.db.selectFrom('login_failures_by_device').select('id').execute()).length, 4, 'exactly the device token\'s budget')
  t.equal((await app.db.selectFrom('login_failures').select('id').execute()).length, 8, 'the rest against the account')
  t.equal((await attempt(app, { email: me.email, password: me.password, deviceToken })).statusCode, 200, 'the right password still gets in: the account has budget left')
  t.equal((await app.db.selectFrom('login_failures').select('id').execute()).length, 8, 'nor against the account')
})
