import { METHODS } from 'node:http'
import type { Histogram, Registry } from '@platformatic/prom-client'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type HTTPMethods, type RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import { poolCounts } from '../db/connect.js'
import { readRouterOf } from '../db/replicas.js'
import type { TandemOptions } from '../schema/options.js'
import { addressList, type AddressTest } from './addresses.js'
import { useConfig } from './config.js'
import type { AttemptKind } from './rate-limit.js'

/** The limits whose rejections are counted: the per-caller limit (requests, WebSocket `subscribe`s) and `ATTEMPT_LIMITS`. */
export type RateLimitName = 'caller' | 'subscribe' | AttemptKind
export type OperationOutcome = 'ok' | 'error'

/** Label values of an operation that no GraphQL name can be (a name is `[_A-Za-z][_0-9A-Za-z]*`). */
export const OPERATION_LABELS = {
  /** An operation without a name. */
  anonymous: '(anonymous)',
  /**
   * A request refused before its operation ran (did not parse or validate, over a limit,
   * rate-limited, …): the name it gave, if any, is not counted.
   */
  unknown: '(unknown)',
  /** A name past `MAX_OPERATION_NAMES`, or longer than `MAX_OPERATION_NAME_LENGTH`. */
  other: '(other)'
} as const
/** Distinct operation names kept as label values: any client can send any name, and each value is a time series. */
export const MAX_OPERATION_NAMES = 100
export const MAX_OPERATION_NAME_LENGTH = 100
/** The route label of a request no route matched: the raw URL would make a series per URL. */
export const UNMATCHED_ROUTE = '(unmatched)'
/** Methods timed under their own name. HEAD and OPTIONS are not timed (probes, preflights: fastify-metrics' default). */
export const TIMED_METHODS: readonly string[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']
/** The method label of every other method (PROPFIND, TRACE, …): any client can send each of them, and each value is a series. */
export const OTHER_METHOD = 'other'
const UNTIMED_METHODS = new Set(['HEAD', 'OPTIONS'])

export interface TandemMetrics {
  /** This application's registry; a host may add metrics of its own to it. */
  readonly registry: Registry
  /** Counts one rejection by a rate limit. */
  rateLimited: (limit: RateLimitName) => void
  /** Counts one GraphQL operation by name (a name or one of `OPERATION_LABELS`) and outcome. */
  graphqlOperation: (name: string, outcome: OperationOutcome) => void
  /** Adds `read()` to the subscriptions reported open at each scrape. */
  countSubscriptions: (read: () => number) => void
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Tandem's metrics, present only when they are on (`metrics` or `metricsPort`). */
    tandemMetrics: TandemMetrics
  }
}

/** Whether the configuration turns metrics on. */
export const metricsEnabled = (config: Pick<TandemOptions, 'metrics' | 'metricsPort'>): boolean =>
  config.metrics === true || config.metricsPort !== undefined

/**
 * Whether a request may read `/metrics` on the API's port: its socket's peer and every
 * `X-Forwarded-For` entry are allowed. The peer, not `request.ip`: with a hop count in `trustProxy`
 * a client that reaches the port directly would choose `request.ip` by the header. And every entry,
 * so that a proxy on an allowed address (nginx on loopback) does not open the endpoint to the clients
 * it forwards; a client can add entries, which only refuses it. `Forwarded` (RFC 7239) is not read: a
 * request carrying it is refused.
 */
function scrapeAllowed (allowed: AddressTest): (request: FastifyRequest) => boolean {
  return (request) => {
    if (!allowed(request.socket.remoteAddress) || request.headers.forwarded !== undefined) return false
    const forwardedFor = request.headers['x-forwarded-for']
    if (forwardedFor === undefined) return true
    return [forwardedFor].flat().join(',').split(',').every((entry) => allowed(entry.trim()))
  }
}

/** Keeps the first `MAX_OPERATION_NAMES` names as they are and folds the rest into one value. */
function boundedNames (): (name: string) => string {
  const kept = new Set<string>(Object.values(OPERATION_LABELS))
  const limit = kept.size + MAX_OPERATION_NAMES
  return (name) => {
    if (kept.has(name)) return name
    if (kept.size >= limit || name.length > MAX_OPERATION_NAME_LENGTH) return OPERATION_LABELS.other
    kept.add(name)
    return name
  }
}

async function metrics (app: FastifyInstance, options: TandemOptions): Promise<void> {
  // Registered by the host already (before `tandem`, which registers it too when told to).
  if (app.hasDecorator('tandemMetrics')) return
  const config = useConfig(app, options)
  // Loaded only when metrics are on, as the other optional dependencies (see PERFORMANCE-DECISIONS.md,
  // 'Optional dependencies loaded only when used').
  const [{ default: client }, { default: { default: fastifyMetrics } }] = await Promise.all([import('@platformatic/prom-client'), import('fastify-metrics')])
  // A registry of this application's own: several applications may run in one process (tests, a
  // host's), and prom-client's global registry refuses a metric name twice.
  const registry = new client.Registry()
  const registers = [registry]

  // fastify-metrics is typed against prom-client, of which @platformatic/prom-client is a drop-in
  // replacement (fastify-metrics prefers it when installed): the same objects, declared twice.
  type Options = Parameters<typeof fastifyMetrics>[1]
  const sameRegistry = registry as unknown as NonNullable<NonNullable<Options['defaultMetrics']>['register']>
  const opts: Options = {
    // Not `metrics`: a host may have fastify-metrics of its own.
    name: 'tandemHttpMetrics',
    promClient: client as unknown as Options['promClient'],
    // Served below from this registry only (fastify-metrics would merge in the global one).
    endpoint: null,
    // Process metrics, the event-loop delay among them.
    defaultMetrics: { enabled: true, register: sameRegistry },
    routeMetrics: {
      // The histogram's `_count` is the request count; a summary would add quantiles per series.
      enabled: { histogram: true, summary: false },
      // Unknown URLs count too (404s, 429s of the unversioned API), under one route label.
      registeredRoutesOnly: false,
      invalidRouteGroup: UNMATCHED_ROUTE,
      // Every method but the timed ones: the others are timed below, under one label.
      methodBlacklist: METHODS.filter((method) => !TIMED_METHODS.includes(method)) as HTTPMethods[],
      overrides: { histogram: { registers: [sameRegistry] }, summary: { registers: [] } }
    }
  }
  await app.register(fastifyMetrics, opts)

  // fastify-metrics would label a request with its method as sent, a series per method: the other
  // methods go into its histogram here, under one label and the route label it would give.
  const durations = registry.getSingleMetric('http_request_duration_seconds') as Histogram<string> | undefined
  if (durations === undefined) throw new Error('metrics: fastify-metrics\' request histogram was not found (has fastify-metrics changed?)')
  app.addHook('onResponse', async (request, reply) => {
    const { method, routeOptions: { config: route, url } } = request
    if (TIMED_METHODS.includes(method) || UNTIMED_METHODS.has(method) || route.disableMetrics === true) return
    durations.observe({ method: OTHER_METHOD, route: route.statsId ?? url ?? UNMATCHED_ROUTE, status_code: reply.statusCode }, reply.elapsedTime / 1000)
  })

  const rejections = new client.Counter({
    name: 'tandem_rate_limit_rejections_total',
    help: 'Requests (429) and WebSocket subscribes refused by a rate limit, by limit',
    labelNames: ['limit'],
    registers
  })
  const operations = new client.Counter({
    name: 'tandem_graphql_operations_total',
    help: `GraphQL operations over HTTP by operation name (of operations that ran: the first ${MAX_OPERATION_NAMES} distinct names, then ${OPERATION_LABELS.other}) and outcome`,
    labelNames: ['operation', 'outcome'],
    registers
  })
  const subscriptionReaders = new Set<() => number>()
  new client.Gauge({ // eslint-disable-line no-new -- registered in `registers`, read through `collect`
    name: 'tandem_graphql_subscriptions_open',
    help: 'GraphQL subscriptions open on this instance',
    registers,
    collect () {
      let open = 0
      for (const read of subscriptionReaders) open += read()
      this.set(open)
    }
  })
  // Known once every plugin is in: the database may be registered after this one.
  app.addHook('onReady', async () => {
    const pool = app.hasDecorator('db') ? poolCounts(app.db) : undefined
    // The embedded database has no pool: one PGlite session in the process.
    if (pool === undefined) return
    const poolGauge = (name: string, help: string, read: () => number) =>
      new client.Gauge({ name, help, registers, collect () { this.set(read()) } })
    poolGauge('tandem_db_pool_in_use', 'Connections to PostgreSQL checked out of the pool (a statement or a transaction)', () => pool.totalCount - pool.idleCount)
    poolGauge('tandem_db_pool_idle', 'Open connections to PostgreSQL waiting in the pool', () => pool.idleCount)
    poolGauge('tandem_db_pool_waiting', 'Queries waiting for a connection of the pool', () => pool.waitingCount)
    poolGauge('tandem_db_pool_max', 'Connections the pool may open (DATABASE_POOL_SIZE)', () => pool.options.max ?? 10)
    const router = readRouterOf(app.db)
    if (router === undefined) return
    // Read replicas: reads served by each pool, and each replica's state and lag (db/replicas.ts).
    const counted = new Map<string, number>()
    new client.Counter({ // eslint-disable-line no-new -- registered in `registers`, read through `collect`
      name: 'tandem_db_reads_total',
      help: 'Reads not part of a write, by the pool that served them (primary, replica 1, …)',
      labelNames: ['pool'],
      registers,
      collect () {
        for (const { pool, reads } of router.report()) {
          this.inc({ pool }, reads - (counted.get(pool) ?? 0))
          counted.set(pool, reads)
        }
      }
    })
    new client.Gauge({ // eslint-disable-line no-new -- as above
      name: 'tandem_db_replica_lag_seconds',
      help: 'How far behind the primary each replica was at its last poll (NaN while not known)',
      labelNames: ['pool'],
      registers,
      collect () { for (const { pool, lagSeconds } of router.report().slice(1)) this.set({ pool }, lagSeconds ?? Number.NaN) }
    })
    new client.Gauge({ // eslint-disable-line no-new -- as above
      name: 'tandem_db_replica_state',
      help: 'Each replica\'s state: 1 for the one it is in (up, lagging, down, unknown), 0 for the others',
      labelNames: ['pool', 'state'],
      registers,
      collect () {
        for (const { pool, state } of router.report().slice(1)) {
          for (const each of ['up', 'lagging', 'down', 'unknown']) this.set({ pool, state: each }, each === state ? 1 : 0)
        }
      }
    })
  })

  const operationName = boundedNames()
  app.decorate('tandemMetrics', {
    registry,
    rateLimited: (limit) => { rejections.inc({ limit }) },
    graphqlOperation: (name, outcome) => { operations.inc({ operation: operationName(name), outcome }) },
    countSubscriptions: (read) => { subscriptionReaders.add(read) }
  } satisfies TandemMetrics)

  const serve = async (_request: FastifyRequest, reply: FastifyReply) => reply.type(registry.contentType).send(await registry.metrics())
  const scrape = (handler: RouteOptions['handler']): RouteOptions => ({
    method: 'GET',
    url: '/metrics',
    // Not part of the API's contract, nor measured itself; its info lines would repeat every scrape.
    schema: { hide: true },
    config: { disableMetrics: true },
    logLevel: 'warn',
    handler
  })
  if (config.metricsPort === undefined) {
    const allowed = scrapeAllowed(addressList(config.metricsAllow))
    // At the root, outside the scopes that Tandem's rate limit is added to. Anyone not allowed is
    // answered as a route that does not exist would be: the endpoint is not advertised.
    app.route(scrape(async (request, reply) => {
      if (allowed(request)) return serve(request, reply)
      reply.callNotFound()
      return reply
    }))
    return
  }
  const listener = Fastify({ loggerInstance: app.log.child({ listener: 'metrics' }) })
  listener.route(scrape(serve))
  app.addHook('onReady', async () => { await listener.listen({ host: config.host, port: config.metricsPort }) })
  app.addHook('onClose', async () => { await listener.close() })
}

/**
 * Prometheus metrics at `GET /metrics`, on the API's port or on `metricsPort` (a listener of its
 * own): request counts and latency by route and status (fastify-metrics), GraphQL operations,
 * the `pg` pool, rate-limit rejections, subscriptions open, and prom-client's process metrics.
 * Register it before the plugins it measures (`tandem` does): they report to it when they find it.
 * @example
 * await app.register(metrics, { metricsPort: 9464 })
 */
export default fp(metrics, { name: 'tandem-metrics', fastify: '5.x' })
