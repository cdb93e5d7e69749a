import rateLimit, { normalizeIP, type RateLimitOptions } from '@fastify/rate-limit'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import { rateLimited } from '../schema/errors.js'
import type { TandemOptions } from '../schema/options.js'
import { settingName, useConfig } from './config.js'

/**
 * Attempts per window at the routes an attacker would hammer: from one IP for one account (an
 * email), and from one IP in all. Sign-in guesses passwords; sign-up probes which emails exist and
 * makes accounts; a password reset guesses one-time tokens and costs a password hash.
 */
export const ATTEMPT_LIMITS = {
  login: { perAccount: 10, perIp: 30, windowMs: 60_000 },
  signUp: { perAccount: 10, perIp: 30, windowMs: 60_000 },
  resetPassword: { perAccount: 10, perIp: 10, windowMs: 60_000 }
} as const
/** Sign-in attempts per minute from one IP for one account, and from one IP in all. */
export const LOGIN_LIMITS = ATTEMPT_LIMITS.login
export type AttemptKind = keyof typeof ATTEMPT_LIMITS

// Named outside the augmentation below: declaration emit drops imports used only inside one.
/** Counts an attempt of `kind` for `account` against `ATTEMPT_LIMITS`. */
export type LimitAttempts = (request: FastifyRequest, reply: FastifyReply, kind: AttemptKind, account: string) => Promise<void>
/** Counts a sign-in attempt for `account` against `LOGIN_LIMITS`. */
export type LimitLogin = (request: FastifyRequest, reply: FastifyReply, account: string) => Promise<void>
/**
 * Counts one message of a long-lived connection (a WebSocket `subscribe`) against the per-caller
 * limit: as user `userId` when the connection's token is valid, else as the connection's address.
 * Resolves to the seconds to wait when over the limit, else undefined.
 */
export type LimitCall = (connection: FastifyRequest, userId: number | undefined) => Promise<number | undefined>
/** The account (an email) a sign-in request is for. */
export type BruteForceKey = (request: FastifyRequest) => string
/**
 * A route whose requests count against `ATTEMPT_LIMITS[kind]`, for the account `account` returns; a
 * request for several (a batch of sign-ups) counts once for each.
 */
export interface AttemptLimit { kind: AttemptKind, account: (request: FastifyRequest) => string | readonly string[] }

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The per-caller limit (`rateLimitMax` per `rateLimitWindow`) as an `onRequest` hook, for every
     * scope Tandem serves; they all count on the same counters.
     */
    tandemRateLimit: onRequestAsyncHookHandler
    /** The same per-caller limit, for what is not a request of its own (a WebSocket `subscribe`). */
    tandemLimitCall: LimitCall
    /**
     * Counts a sign-in attempt for `account` (an email) against `LOGIN_LIMITS`; throws the 429
     * (headers set on `reply`) when over. REST routes say `config: { bruteForceKey }` instead.
     */
    limitLogin: LimitLogin
    /** Counts an attempt of `kind` (sign-in, sign-up, password reset) for `account`; throws the 429 when over. */
    limitAttempts: LimitAttempts
  }
  interface FastifyContextConfig {
    /**
     * Marks a sign-in route: attempts are also limited per IP and per IP and account
     * (`LOGIN_LIMITS`), the account being what this returns for the request.
     */
    bruteForceKey?: BruteForceKey
    /** Counts the route's requests against `ATTEMPT_LIMITS`: sign-up, password reset. */
    attemptLimit?: AttemptLimit
  }
}

/** `setting` is the operator's name for the URL (`REDIS_URL` or `redisUrl`), for the error. */
async function connectRedis (url: string, setting: string, log: FastifyBaseLogger): Promise<Redis> {
  // No offline queue: while Redis is away commands fail at once and the limiter lets requests
  // through (skipOnError) rather than holding them.
  // Loaded only when used: importing ioredis costs every process memory, Redis or not (see
  // PERFORMANCE-DECISIONS.md, 'Optional dependencies loaded only when used').
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 5_000 })
  redis.on('error', (err: Error) => { log.warn({ err }, 'rate limit: redis error') })
  try {
    await redis.connect()
  } catch (error) {
    redis.disconnect()
    throw new Error(`cannot connect to Redis (${setting}): ${(error as Error).message}`)
  }
  return redis
}

const ip = (request: FastifyRequest): string => normalizeIP(request.ip)

async function rateLimiting (app: FastifyInstance, options: TandemOptions): Promise<void> {
  const config = useConfig(app, options)
  const redis = config.redisUrl === undefined ? undefined : await connectRedis(config.redisUrl, settingName(config, 'redisUrl'), app.log)
  if (redis !== undefined) app.addHook('onClose', async () => { await redis.quit() })

  const common: RateLimitOptions = {
    enableDraftSpec: true,
    skipOnError: true,
    errorResponseBuilder: (_request, context) => rateLimited(context.after)
  }
  // A caller with a valid token counts as its user, whatever its IP. Everyone else counts as their
  // IP, a revoked or expired token too: a thief of a dead token must not spend its owner's quota.
  // A message of a WebSocket counts as the user of the connection's token, which is not in its headers.
  const connectionUsers = new WeakMap<FastifyRequest, number | undefined>()
  const callerKey = (request: FastifyRequest): string => {
    const user = connectionUsers.has(request) ? connectionUsers.get(request) : app.accessTokens.peek(request)?.sub
    return user === undefined ? `ip:${ip(request)}` : `user:${user}`
  }
  // Rejections are counted when Tandem's metrics are on (registered before this plugin).
  const metrics = app.hasDecorator('tandemMetrics') ? app.tandemMetrics : undefined
  const perCaller: RateLimitOptions = {
    ...common,
    max: config.rateLimitMax,
    timeWindow: config.rateLimitWindow,
    keyGenerator: callerKey,
    ...(metrics === undefined ? {} : { onExceeded: () => { metrics.rateLimited('caller') } })
  }

  const accounts = new WeakMap<FastifyRequest, string>()
  // Registered in a scope of its own, so its hooks and decorators reach no route of the host.
  let limitCaller: onRequestAsyncHookHandler | undefined
  let countCaller: ReturnType<FastifyInstance['createRateLimit']> | undefined
  const attemptLimits = new Map<AttemptKind, Array<ReturnType<FastifyInstance['createRateLimit']>>>()
  await app.register(async (scope) => {
    await scope.register(rateLimit, { ...perCaller, global: false, redis, nameSpace: 'tandem-rate-limit:' })
    // Without options both use the plugin's own store: a request and a WebSocket message count on
    // the same counters (a limiter given options gets a store of its own).
    limitCaller = scope.rateLimit() as onRequestAsyncHookHandler
    countCaller = scope.createRateLimit()
    for (const [kind, limits] of Object.entries(ATTEMPT_LIMITS) as Array<[AttemptKind, typeof ATTEMPT_LIMITS[AttemptKind]]>) {
      // Sign-in keeps the keys it always had, so that counters survive an upgrade.
      const prefix = kind === 'login' ? 'login' : `attempts:${kind}`
      const window = { ...common, timeWindow: limits.windowMs }
      attemptLimits.set(kind, [
        scope.createRateLimit({ ...window, max: limits.perIp, keyGenerator: (request) => `${prefix}:${ip(request)}` }),
        scope.createRateLimit({ ...window, max: limits.perAccount, keyGenerator: (request) => `${prefix}:${ip(request)}:${accounts.get(request) ?? ''}` })
      ])
    }
  })
  app.decorate('tandemRateLimit', limitCaller as onRequestAsyncHookHandler)
  const limitCall: LimitCall = async (connection, userId) => {
    connectionUsers.set(connection, userId)
    const result = await (countCaller as NonNullable<typeof countCaller>)(connection)
    if (result.isAllowed || !result.isExceeded) return undefined
    metrics?.rateLimited('subscribe')
    return result.ttlInSeconds
  }
  app.decorate('tandemLimitCall', limitCall)

  const limitAttempts: LimitAttempts = async (request, reply, kind, account) => {
    accounts.set(request, account.toLowerCase())
    for (const limit of attemptLimits.get(kind) ?? []) {
      const result = await limit(request)
      if (result.isAllowed || !result.isExceeded) continue
      metrics?.rateLimited(kind)
      reply.header('ratelimit-limit', result.max).header('ratelimit-remaining', 0)
        .header('ratelimit-reset', result.ttlInSeconds).header('retry-after', result.ttlInSeconds)
      throw rateLimited(`${result.ttlInSeconds} seconds`)
    }
  }
  app.decorate('limitAttempts', limitAttempts)
  app.decorate('limitLogin', async (request: FastifyRequest, reply: FastifyReply, account: string) => limitAttempts(request, reply, 'login', account))
  app.addHook('onRoute', (route) => {
    const key = route.config?.bruteForceKey
    const attempts = route.config?.attemptLimit ?? (key === undefined ? undefined : { kind: 'login', account: key })
    if (attempts === undefined) return
    const limit = async (request: FastifyRequest, reply: FastifyReply) => {
      const accounts = attempts.account(request)
      for (const account of typeof accounts === 'string' ? [accounts] : accounts) await limitAttempts(request, reply, attempts.kind, account)
    }
    route.preHandler = [limit, ...[route.preHandler ?? []].flat()]
  })
}

/**
 * Rate limiting: `rateLimitMax` per `rateLimitWindow` per caller (user id when signed in, else IP),
 * and stricter limits on sign-in routes; counters in Redis when `redisUrl` is set, so that
 * several instances share them. Answers 429 with `Retry-After` and the IETF draft's
 * `RateLimit-*` headers. Apply it to a scope with `scope.addHook('onRequest', app.tandemRateLimit)`.
 */
export default fp(rateLimiting, { name: 'tandem-rate-limit', fastify: '5.x', dependencies: ['tandem-auth'] })
