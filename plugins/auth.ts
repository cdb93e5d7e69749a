// Kept in the declarations: `request.user` is declared by @fastify/jwt, which they would not load otherwise.
/// <reference types="@fastify/jwt" preserve="true" />
import { randomUUID } from 'node:crypto'
import jwt from '@fastify/jwt'
import type { FastifyInstance, FastifyRequest, onRequestAsyncHookHandler, preHandlerAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { claimLoginAttempt, clearLoginAttempt, ensureAdmin, findLoginAccount, type LoginAccount, type LoginClaim, type Role } from '../db/auth.js'
import { forbidden, TandemError, tooManyFor, unauthenticated } from '../schema/errors.js'
import type { TandemOptions } from '../schema/options.js'
import { ConfigError, settingName, useConfig } from './config.js'
import { deviceTokens } from './device-tokens.js'
import { hashPassword, verifyPassword } from './passwords.js'
import { RevocationList } from './revocations.js'

export type { Role }

/** What an access token carries (RFC 7519 wants `sub` as a string). */
export interface AccessTokenClaims {
  sub: string
  role: Role
  jti: string
  /** The user's token version when it was issued: raising the version ends the token. */
  ver: number
}

/** The caller of a request that passed authentication. */
export interface AccessUser {
  /** The user's id. */
  sub: number
  role: Role
  jti: string
  /** Expiry, in seconds since the epoch. */
  exp: number
  /** Issue time, in seconds since the epoch (0 for a token without one). */
  iat: number
  /** The user's token version it was issued with (0 for a token without one). */
  ver: number
}

export interface AccessToken {
  accessToken: string
  tokenType: 'Bearer'
  /** Lifetime in seconds. */
  expiresIn: number
}

/** What a sign-in answers: an access token, and the device token its client sends with its next sign-in. */
export interface LoginAnswer extends AccessToken {
  /**
   * Names this client as one that signed in to the account: sent back with a later sign-in (for
   * `loginDeviceTokenLifetime`), it is not refused by the per-account failure limit. It signs no one in.
   */
  deviceToken: string
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: AccessTokenClaims
    user: AccessUser
  }
}

/** Loads the id of the user who owns the resource a request names; undefined when there is none (the handler answers 404). */
export type OwnerLoader = (request: FastifyRequest) => Promise<number | undefined>

/**
 * Who may call a route, as its `config.auth`. Authentication runs in the route's `onRequest`
 * (so 401 comes before the body is read or validated), rules about the path's resource in
 * `preHandler` (after validation, so ids are numbers and a bad one is 400).
 */
export type AuthRule = 'authenticated' | 'admin' | 'selfOrAdmin' | { ownerOrAdmin: OwnerLoader }

/** The rule for routes that the owner of the resource, or an admin, may call. */
export const ownerOrAdmin = (loadOwner: OwnerLoader): AuthRule => ({ ownerOrAdmin: loadOwner })

export interface AccessTokens {
  /**
   * Checks an email and password; the same 401 for an unknown email, a wrong password or an account
   * without one. `deviceToken` is one an earlier sign-in of the account answered (see `checkPassword`).
   */
  login (email: string, password: string, deviceToken?: string): Promise<LoginAnswer>
  /**
   * The account of `email` when `password` is its password, else undefined. A failure counts
   * against `LOGIN_FAILURES_PER_ACCOUNT`, as a failed login does, and past it this throws the 429:
   * wherever a password is checked (sign-in, an email change), guesses share one budget. With a
   * valid device token of the account (not expired, not forged, not another account's) failures
   * count against that token instead (`loginDeviceFailures`), and the account's limit does not
   * apply; past the token's own limit, or with any other token, the account's applies.
   */
  checkPassword (email: string, password: string, deviceToken?: string): Promise<LoginAccount | undefined>
  /**
   * Signs an access token for the user, of their current token version (`users.token_version`;
   * a token of a lower version is refused as revoked).
   */
  issue (user: { id: number, role: Role, tokenVersion?: number | undefined }): AccessToken
  /** Checks a raw token: signature, algorithm, expiry, claims and revocation; 401 otherwise. */
  verify (token: string): Promise<AccessUser>
  /** Checks the request's `Authorization: Bearer` token and sets `request.user`; 401 otherwise. */
  authenticate (request: FastifyRequest): Promise<AccessUser>
  /**
   * The caller of a validly signed, unexpired token that this instance does not know to be revoked,
   * or undefined. Cheap: no I/O (a revocation made elsewhere in the last second may be missed).
   */
  peek (request: FastifyRequest): AccessUser | undefined
  /** Revokes the token at once, on every instance. */
  revoke (user: AccessUser): Promise<void>
  /**
   * Reads the revocations written since the last poll now, rather than within the second: after a
   * write that revoked every token of a user (`revokeTokensOf`), this instance refuses them at once.
   * Never throws: if PostgreSQL cannot be read, the next poll brings them.
   */
  refreshRevocations (): Promise<void>
  /** When tokens issued now expire at the latest. */
  newTokensExpireAt (): Date
  /** Calls `listener` when tokens may have been revoked (here, or on another instance within the second). */
  onRevocation (listener: () => void): void
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Tandem's access tokens: issue, check and revoke them. */
    accessTokens: AccessTokens
  }
  interface FastifyContextConfig {
    /** Who may call the route; see `AuthRule`. Without it the route is public. */
    auth?: AuthRule
  }
}

/**
 * Failed sign-ins one account may take in a window, from all addresses together: a proxy's shared
 * address does not lock everyone out (the per-address limits are per address and account), and
 * many addresses do not multiply the guesses at one account.
 */
export const LOGIN_FAILURES_PER_ACCOUNT = { failures: 20, windowSeconds: 15 * 60 } as const

/** Set on the config of the routes whose `config.auth` this plugin attached. */
const GUARDED = Symbol('tandem.auth.guarded')

const ISSUER = 'tandem'
const MAX_TOKEN_LENGTH = 4096
const VERIFIED_TOKENS_REMEMBERED = 4096
const bearer = /^Bearer +([A-Za-z0-9_.~+/-]+=*) *$/i
const units: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86_400 }

/** `15m` → 900; a bare number is seconds (the options schema has checked the format). */
export function durationSeconds (text: string): number {
  const [, value = '0', unit = 's'] = /^(\d+)\s*(ms|s|m|h|d)?$/.exec(text.trim()) ?? []
  return Math.max(1, Math.ceil(Number(value) * (units[unit] ?? 1)))
}

type Checked = { user: AccessUser } | { error: string }

function toUser (claims: Record<string, unknown>): AccessUser | undefined {
  const { sub, role, jti, exp, iat, ver = 0 } = claims
  if (typeof sub !== 'string' || !/^[1-9]\d{0,15}$/.test(sub) || !Number.isSafeInteger(Number(sub))) return undefined
  if ((role !== 'user' && role !== 'admin') || typeof jti !== 'string' || jti === '' || typeof exp !== 'number') return undefined
  if (!Number.isSafeInteger(ver)) return undefined
  return { sub: Number(sub), role, jti, exp, iat: typeof iat === 'number' ? iat : 0, ver: ver as number }
}

async function auth (app: FastifyInstance, options: TandemOptions): Promise<void> {
  const config = useConfig(app, options)
  const expiresIn = durationSeconds(config.jwtExpiresIn)
  await app.register(jwt, {
    secret: config.jwtSecret,
    sign: { algorithm: 'HS256', iss: ISSUER, expiresIn },
    // Only HS256 with our secret: `alg: none` and every other algorithm fail here. A client sends
    // the same token with every request until it expires: fast-jwt remembers the tokens it has
    // verified (by a SHA-256 of the token, until their expiry at the latest), which is cheaper than
    // verifying one again (see PERFORMANCE-DECISIONS.md, 'Verified tokens remembered').
    verify: { algorithms: ['HS256'], allowedIss: ISSUER, cache: VERIFIED_TOKENS_REMEMBERED }
  })

  const devices = deviceTokens(config.jwtSecret, durationSeconds(config.loginDeviceTokenLifetime))
  const revocations = new RevocationList(app.db, app.log, expiresIn)
  await revocations.start()
  app.addHook('onClose', async () => { await revocations.close() })

  if (config.adminEmail !== undefined && config.adminPassword !== undefined) {
    const password = config.adminPassword
    const outcome = await ensureAdmin(app.db, config.adminEmail, {
      hash: async () => hashPassword(password),
      matches: async (stored) => verifyPassword(stored, password)
    }, new Date(Date.now() + expiresIn * 1000))
    if (outcome === 'not-an-admin') {
      throw new ConfigError(`${settingName(config, 'adminEmail')} ${config.adminEmail} belongs to an account that is not an administrator; configuration never promotes an account: choose another address`)
    }
    if (outcome === 'password-changed') await revocations.refresh().catch(() => {})
    app.log.info({ email: config.adminEmail, outcome }, 'administrator account ready')
  }

  const checkToken = (token: string): Checked => {
    if (token.length > MAX_TOKEN_LENGTH) return { error: 'invalid token' }
    let claims: Record<string, unknown>
    try {
      claims = app.jwt.verify<Record<string, unknown>>(token)
    } catch (error) {
      return { error: (error as { code?: string }).code === 'FAST_JWT_EXPIRED' ? 'token expired' : 'invalid token' }
    }
    const user = toUser(claims)
    return user === undefined ? { error: 'invalid token' } : { user }
  }

  const checked = new WeakMap<FastifyRequest, Checked>()
  const checkRequest = (request: FastifyRequest): Checked => {
    let result = checked.get(request)
    if (result === undefined) {
      const header = request.headers.authorization
      const token = header === undefined ? undefined : bearer.exec(header)?.[1]
      if (header === undefined) result = { error: 'authentication required: send Authorization: Bearer <token>' }
      else if (token === undefined) result = { error: 'malformed Authorization header: expected Bearer <token>' }
      else result = checkToken(token)
      checked.set(request, result)
    }
    return result
  }

  const notRevoked = async (result: Checked): Promise<AccessUser> => {
    if ('error' in result) throw unauthenticated(result.error)
    if (await revocations.has(result.user)) throw unauthenticated('token revoked')
    return result.user
  }

  const tokens: AccessTokens = {
    async checkPassword (email, password, deviceToken) {
      const { failures, windowSeconds } = LOGIN_FAILURES_PER_ACCOUNT
      const account = await findLoginAccount(app.db, email)
      const device = deviceToken === undefined || account === undefined ? undefined : devices.check(deviceToken, account.id)
      // A known client spends its token's budget; once that is spent, or without one, the account's.
      let claim: LoginClaim | undefined = device === undefined ? undefined : await claimLoginAttempt(app.db, { device }, config.loginDeviceFailures, windowSeconds)
      if (claim?.claimed !== true) claim = await claimLoginAttempt(app.db, { account: email }, failures, windowSeconds)
      if (!claim.claimed) throw tooManyFor(claim.clearsInSeconds)
      if (!await verifyPassword(account?.password_hash, password) || account === undefined) return undefined
      await clearLoginAttempt(app.db, claim)
      return account
    },
    async login (email, password, deviceToken) {
      const account = await tokens.checkPassword(email, password, deviceToken)
      if (account === undefined) throw unauthenticated('invalid email or password')
      return { ...tokens.issue({ id: account.id, role: account.role, tokenVersion: account.token_version }), deviceToken: devices.issue(account.id) }
    },
    issue (user) {
      const claims: AccessTokenClaims = { sub: String(user.id), role: user.role, jti: randomUUID(), ver: user.tokenVersion ?? 0 }
      return { accessToken: app.jwt.sign(claims), tokenType: 'Bearer', expiresIn }
    },
    verify: async (token) => notRevoked(checkToken(token)),
    async authenticate (request) {
      const user = await notRevoked(checkRequest(request))
      request.user = user
      return user
    },
    peek (request) {
      const result = checkRequest(request)
      return 'user' in result && !revocations.known(result.user) ? result.user : undefined
    },
    revoke: async (user) => revocations.add(user.jti, new Date(user.exp * 1000)),
    // The write is done and every instance reads it within the second anyway: a failure here is no reason to fail the request.
    refreshRevocations: async () => { await revocations.refresh().catch((err: unknown) => { app.log.warn({ err }, 'could not read the revoked tokens') }) },
    newTokensExpireAt: () => new Date(Date.now() + expiresIn * 1000),
    onRevocation: (listener) => { revocations.onChange(listener) }
  }
  app.decorate('accessTokens', tokens)

  const authenticated: onRequestAsyncHookHandler = async (request) => { await tokens.authenticate(request) }
  const admin: onRequestAsyncHookHandler = async (request) => {
    if ((await tokens.authenticate(request)).role !== 'admin') throw forbidden('only an administrator may do this')
  }
  const selfOrAdmin: preHandlerAsyncHookHandler = async (request) => {
    assertSelfOrAdmin(request.user, (request.params as { id?: unknown }).id)
  }
  const ownerOrAdminOf = (load: OwnerLoader): preHandlerAsyncHookHandler => async (request) => {
    if (request.user.role === 'admin') return
    assertOwnerOrAdmin(request.user, await load(request))
  }

  app.addHook('onRoute', (route) => {
    const rule = route.config?.auth
    if (rule === undefined) return
    let authorize: preHandlerAsyncHookHandler | undefined
    if (rule === 'selfOrAdmin') authorize = selfOrAdmin
    else if (typeof rule === 'object' && typeof rule.ownerOrAdmin === 'function') authorize = ownerOrAdminOf(rule.ownerOrAdmin)
    else if (rule !== 'authenticated' && rule !== 'admin') throw new Error(`unknown auth rule ${JSON.stringify(rule)} on ${route.method.toString()} ${route.url}`)
    route.onRequest = [rule === 'admin' ? admin : authenticated, ...[route.onRequest ?? []].flat()]
    if (authorize !== undefined) route.preHandler = [authorize, ...[route.preHandler ?? []].flat()]
    if (route.schema !== undefined) route.schema = { ...route.schema, security: [{ bearerAuth: [] }] } as typeof route.schema
    route.config = { ...route.config, [GUARDED]: true } as typeof route.config
  })

  // `onRoute` sees only the routes added after this plugin. A root hook reaches every route, the
  // earlier ones too: one that asks for a rule this plugin never attached is refused, not served.
  app.addHook('onRequest', (request, _reply, done) => {
    const config = request.routeOptions.config as { auth?: unknown, [GUARDED]?: true }
    if (config.auth === undefined || config[GUARDED] === true) return done()
    request.log.error({ rule: config.auth, route: request.routeOptions.url }, 'a route asks for an auth rule that was never attached: register Tandem\'s auth plugin before it')
    done(new TandemError('TANDEM_ERR_INTERNAL', 'this route\'s access rule is not in force'))
  })
}

/**
 * The rule of `PUT/PATCH/DELETE /users/{id}` and its GraphQL mutations: the user itself or an
 * administrator. One function, so both styles refuse the same callers.
 */
export function assertSelfOrAdmin (caller: AccessUser, userId: unknown): void {
  if (caller.role !== 'admin' && userId !== caller.sub) throw forbidden('only this user or an administrator may do this')
}

/** The rule of a resource's owner or an administrator; an unknown owner (no such resource) passes, for the 404. */
export function assertOwnerOrAdmin (caller: AccessUser, ownerId: number | undefined): void {
  if (caller.role !== 'admin' && ownerId !== undefined && ownerId !== caller.sub) throw forbidden('only its owner or an administrator may do this')
}

/** Route plugins call this first: a route with `config.auth` must never be served unguarded. */
export function requireAuth (app: FastifyInstance): void {
  if (!app.hasDecorator('accessTokens')) throw new Error('register Tandem\'s auth plugin before its routes')
}

/**
 * Access tokens (JWT, HS256) with logout, the admin account of `adminEmail`, and the route rule
 * `config: { auth: 'authenticated' | 'admin' | 'selfOrAdmin' | ownerOrAdmin(loadOwner) }`.
 * Register it before the routes that use the rule.
 * @example
 * await app.register(auth, { jwtSecret: process.env.JWT_SECRET })
 */
export default fp(auth, { name: 'tandem-auth', fastify: '5.x', dependencies: ['tandem-database'] })
