import Fastify, { type FastifyInstance, type HTTPMethods, type LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import { ensureAdmin } from '../../db/auth.js'
import { hashPassword, verifyPassword } from '../../plugins/passwords.js'
import { serverOptions } from '../../plugins/server-options.js'
import tandem, { type TandemPluginOptions } from '../../app/tandem.js'
import { resetDb, testDb, type Test } from './database.js'

export { resetDb, testDb, withDatabase } from './database.js'
export { freePort, runId, startServer } from './processes.js'

export const TEST_SECRET = 'test-secret-that-is-long-enough'

/** A Tandem server over the file's test database, emptied first, closed when the test ends. */
export async function build (t: Test, options: TandemPluginOptions = {}): Promise<FastifyInstance> {
  const db = await testDb()
  await resetDb(db)
  const app = Fastify(serverOptions({ logLevel: 'silent' }))
  // The suite's files run side by side on a small machine, whose event loops then stall for seconds:
  // overload answers (503) are for the tests that ask for them (test/plugins/overload.test.ts).
  await app.register(tandem, { db, jwtSecret: TEST_SECRET, rootHandlers: true, overloadMaxEventLoopDelay: 0, ...options })
  await app.ready()
  t.teardown(() => app.close())
  return app
}

if (process.env.TZ !== 'UTC') process.env.TZ = 'UTC'

/** The parsed JSON body of an injected response. */
export function body<T = Record<string, unknown>> (response: LightMyRequestResponse): T {
  return JSON.parse(response.body) as T
}

/**
 * A caller of `/api/v1…` holding `auth` (anonymous without it).
 * @example const bob = apiClient(app, headers); await bob('POST', '/posts', { title, content })
 */
export const apiClient = (app: FastifyInstance, auth?: { authorization: string }) =>
  (method: HTTPMethods, url: string, payload?: object, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> =>
    app.inject({ method, url: '/api/v1' + url, ...(payload === undefined ? {} : { payload }), headers: { ...auth, ...headers } })

/** An `Authorization` header, to pass as `headers` to `app.inject`. */
export type AuthHeaders = Record<'authorization', string>

/**
 * `Authorization` for a token of the given user, signed without touching the database (the user
 * need not exist; reads only ask for a valid token). Default: user 1, role `user`.
 * @example await app.inject({ url: '/api/v1/users', headers: await authHeaders(app) })
 */
export async function authHeaders (app: FastifyInstance, user: { id: number, role?: 'user' | 'admin' } = { id: 1 }): Promise<AuthHeaders> {
  const { accessToken } = app.accessTokens.issue({ id: user.id, role: user.role ?? 'user' })
  return { authorization: `Bearer ${accessToken}` }
}

export interface SignedUp { id: number, name: string, email: string, password: string }

let signUps = 0

/** Signs a user up through `POST /api/v1/users` (with a password, so that it can log in). */
export async function signUp (app: FastifyInstance, user: Partial<Omit<SignedUp, 'id'>> = {}): Promise<SignedUp> {
  const n = ++signUps
  const input = { name: `User ${n}`, email: `user${n}@example.com`, password: 'correct horse battery', ...user }
  // Each from an address of its own: sign-ups are limited per address.
  const res = await app.inject({ method: 'POST', url: '/api/v1/users', payload: input, remoteAddress: `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}` })
  if (res.statusCode !== 201) throw new Error(`sign-up failed: ${res.statusCode} ${res.body}`)
  return { ...input, id: body<{ id: number }>(res).id }
}

/** Logs in through `POST /api/v1/auth/login` and returns the `Authorization` header to send. */
export async function login (app: FastifyInstance, email: string, password: string): Promise<AuthHeaders> {
  const res = await app.inject({ method: 'POST', url: '/api/v1/auth/login', payload: { email, password } })
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.statusCode} ${res.body}`)
  return { authorization: `Bearer ${body<{ accessToken: string }>(res).accessToken}` }
}

/** A signed-up user and its `Authorization` header. */
export async function signedIn (app: FastifyInstance, user: Partial<Omit<SignedUp, 'id'>> = {}): Promise<SignedUp & { headers: AuthHeaders }> {
  const created = await signUp(app, user)
  return { ...created, headers: await login(app, created.email, created.password) }
}

export const ADMIN = { email: 'admin@example.com', password: 'admin-password-1' }

/** The `Authorization` header of an administrator, made in the database and logged in for real. */
export async function adminToken (app: FastifyInstance): Promise<AuthHeaders> {
  await ensureAdmin(app.db, ADMIN.email, { hash: async () => hashPassword(ADMIN.password), matches: async (stored) => verifyPassword(stored, ADMIN.password) }, app.accessTokens.newTokensExpireAt())
  return login(app, ADMIN.email, ADMIN.password)
}

export interface GraphqlResponse<D = Record<string, any>> {
  statusCode: number
  data?: D | null
  errors?: Array<{ message: string, path?: Array<string | number>, extensions?: { code?: string, field?: string, [key: string]: unknown } }>
}

/**
 * Sends one GraphQL request (`POST /graphql`) and returns the status with the parsed body.
 * @example const { data, errors } = await graphql(app, '{ users { id } }', { headers })
 */
export async function graphql<D = Record<string, any>> (
  app: FastifyInstance,
  query: string,
  options: { variables?: Record<string, unknown>, headers?: Record<string, string>, extensions?: Record<string, unknown>, operationName?: string, remoteAddress?: string } = {}
): Promise<GraphqlResponse<D>> {
  const { headers, remoteAddress, ...rest } = options
  const res = await app.inject({ method: 'POST', url: '/graphql', payload: { query, ...rest }, ...(headers === undefined ? {} : { headers }), ...(remoteAddress === undefined ? {} : { remoteAddress }) })
  return { statusCode: res.statusCode, ...JSON.parse(res.body) }
}

/** The `extensions.code` of each error of a GraphQL response. */
export const errorCodes = (response: GraphqlResponse): Array<string | undefined> => (response.errors ?? []).map((e) => e.extensions?.code)

/**
 * Makes recording the answer of an `Idempotency-Key` fail, as a crash between a write and that
 * record would: a trigger refuses the key's update. Returns what lifts it (also done at teardown).
 */
export async function failRecording (t: Test, app: FastifyInstance, key: string): Promise<() => Promise<void>> {
  await sql`create function tandem_test_refuse_record () returns trigger language plpgsql as $$
    begin raise exception 'the process died here'; end $$`.execute(app.db)
  await sql`create trigger tandem_test_refuse_record before update on idempotency_keys
    for each row when (new.key = ${sql.lit(key)}) execute function tandem_test_refuse_record()`.execute(app.db)
  const lift = async () => {
    await sql`drop trigger if exists tandem_test_refuse_record on idempotency_keys`.execute(app.db)
    await sql`drop function if exists tandem_test_refuse_record ()`.execute(app.db)
  }
  t.teardown(lift)
  return lift
}
