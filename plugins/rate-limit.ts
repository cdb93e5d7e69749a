import rateLimit, { normalizeIP, type RateLimitOptions } from '@fastify/rate-limit'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest, onRequestAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import { rateLimited } from '../schema/errors.js'
import type { TandemOptions } from '../schema/options.js'
import { useConfig } from './config.js'

/** Sign-in attempts per minute from one IP for one account, and from one IP in all. */
export const LOGIN_LIMITS = { perAccount: 10, perIp: 30, windowMs: 60_000 } as const

// Named outside the augmentation below: declaration emit drops imports used only inside one.
/** Counts a sign-in attempt for `account` against `LOGIN_LIMITS`. */
export type LimitLogin = (request: FastifyRequest, reply: FastifyReply, account: string) => Promise<void>
/** The account (an email) a sign-in request is for. */
export type BruteForceKey = (request: FastifyRequest) => string

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The per-caller limit (`rateLimitMax` per `rateLimitWindow`) as an `onRequest` hook, for every
     * scope Tandem serves; they all count on the same counters.
     */
    tandemRateLimit: onRequestAsyncHookHandler
    /**
     * Counts a sign-in attempt for `account` (an email) against `LOGIN_LIMITS`; throws the 429
     * (headers set on `reply`) when over. REST routes say `config: { bruteForceKey }` instead.
     */
    limitLogin: LimitLogin
  }
  interface FastifyContextConfig {
    /**
     * Marks a sign-in route: attempts are also limited per IP and per IP and account
     * (`LOGIN_LIMITS`), the account being what this returns for the request.
     */
    bruteForceKey?: BruteForceKey
  }
}

async function connectRedis (url: string, log: FastifyBaseLogger): Promise<Redis> {
  // No offline queue: while Redis is away commands fail at once and the limiter lets requests
  // through (skipOnError) rather than holding them.
  // Loaded only when used: importing ioredis costs every process about 10 MB of memory.
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 5_000 })
  redis.on('error', (err: Error) => { log.warn({ err }, 'rate limit: redis error') })
  try {
    await redis.connect()
  } catch (error) {
    redis.disconnect()
    throw new Error(`cannot connect to Redis (redisUrl): ${(error as Error).message}`)
  }
  return redis
}

const ip = (request: FastifyRequest): string => normalizeIP(request.ip)

async function rateLimiting (app: FastifyInstance, options: TandemOptions): Promise<void> {
  const config = useConfig(app, options)
  const redis = config.redisUrl === undefined ? undefined : await connectRedis(config.redisUrl, app.log)
  if (redis !== undefined) app.addHook('onClose', async () => { await redis.quit() })

  const common: RateLimitOptions = {
    enableDraftSpec: true,
    skipOnError: true,
    errorResponseBuilder: (_request, context) => rateLimited(context.after)
  }
  // A caller with a validly signed token counts as its user, whatever its IP; a revoked one still
  // counts there (it can only spend that user's quota). Everyone else counts as their IP.
  const perCaller: RateLimitOptions = {
    ...common,
    max: config.rateLimitMax,
    timeWindow: config.rateLimitWindow,
    keyGenerator: (request) => {
      const user = app.accessTokens.peek(request)
      return user === undefined ? `ip:${ip(request)}` : `user:${user.sub}`
    }
  }

  const accounts = new WeakMap<FastifyRequest, string>()
  // Registered in a scope of its own, so its hooks and decorators reach no route of the host.
  let limitCaller: onRequestAsyncHookHandler | undefined
  let loginLimits: Array<ReturnType<FastifyInstance['createRateLimit']>> = []
  await app.register(async (scope) => {
    await scope.register(rateLimit, { ...perCaller, global: false, redis, nameSpace: 'tandem-rate-limit:' })
    limitCaller = scope.rateLimit(perCaller) as onRequestAsyncHookHandler
    const window = { ...common, timeWindow: LOGIN_LIMITS.windowMs }
    loginLimits = [
      scope.createRateLimit({ ...window, max: LOGIN_LIMITS.perIp, keyGenerator: (request) => `login:${ip(request)}` }),
      scope.createRateLimit({ ...window, max: LOGIN_LIMITS.perAccount, keyGenerator: (request) => `login:${ip(request)}:${accounts.get(request) ?? ''}` })
    ]
  })
  app.decorate('tandemRateLimit', limitCaller as onRequestAsyncHookHandler)

  app.decorate('limitLogin', async (request: FastifyRequest, reply: FastifyReply, account: string) => {
    accounts.set(request, account.toLowerCase())
    for (const limit of loginLimits) {
      const result = await limit(request)
      if (result.isAllowed || !result.isExceeded) continue
      reply.header('ratelimit-limit', result.max).header('ratelimit-remaining', 0)
        .header('ratelimit-reset', result.ttlInSeconds).header('retry-after', result.ttlInSeconds)
      throw rateLimited(`${result.ttlInSeconds} seconds`)
    }
  })
  app.addHook('onRoute', (route) => {
    const key = route.config?.bruteForceKey
    if (key === undefined) return
    const limit = async (request: FastifyRequest, reply: FastifyReply) => { await app.limitLogin(request, reply, key(request)) }
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
