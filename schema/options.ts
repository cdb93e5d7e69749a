import { Type, type Static } from '@sinclair/typebox'
import { StringEnum } from './common.js'

/**
 * Every option of Tandem API, in camelCase. The environment variables of the server entry point
 * are derived from these keys (`rateLimitMax` → `RATE_LIMIT_MAX`), so this is the one place the
 * configuration's shape is written down.
 */
export const TandemOptionsSchema = Type.Object({
  /** @example '0.0.0.0' */
  host: Type.String({ default: '127.0.0.1', minLength: 1 }),
  /** @example 8080 */
  port: Type.Integer({ default: 3000, minimum: 0, maximum: 65535 }),
  /** `postgres://…` of a real PostgreSQL server; unset means the embedded database. @example 'postgres://app@127.0.0.1/app' */
  databaseUrl: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  /**
   * Prepare each distinct SQL statement once per pooled connection (PostgreSQL parses and plans it
   * once). Turn off behind a pooler that cannot keep prepared statements, such as PgBouncer in
   * transaction mode before 1.21. @example false
   */
  databasePreparedStatements: Type.Boolean({ default: true }),
  /**
   * Connections the pool keeps to a real server at most; requests beyond them wait for one. Mind
   * the server's `max_connections` across instances. @example 40
   */
  databasePoolSize: Type.Integer({ default: 20, minimum: 1, maximum: 1000 }),
  /**
   * Milliseconds after which a real server cancels a statement (one stuck on a lock, or a search
   * that scans everything): the request gets a 503 and the pooled connection is free again.
   * 0: no limit. @example 5000
   */
  databaseStatementTimeout: Type.Integer({ default: 10_000, minimum: 0 }),
  /**
   * Streaming replicas of `databaseUrl`, comma-separated: reads that are not part of a write (REST
   * `GET`s, GraphQL queries and their relations, counts) go to one of them; writes, what a write reads,
   * Idempotency-Key records, locks, token checks and subscriptions' answers stay on the primary. A
   * signed-in caller who wrote reads a replica only once it has replayed that write. Unset: every read
   * goes to `databaseUrl`. @example 'postgres://app@replica-1/app,postgres://app@replica-2/app'
   */
  databaseReadUrls: Type.Optional(Type.String({ pattern: '^\\s*postgres(ql)?://[^,]+(,\\s*postgres(ql)?://[^,]+)*$' })),
  /**
   * How far behind the primary a replica may be and still serve the reads of callers who have not
   * written lately; one further behind is skipped until it catches up. Seconds or a duration such
   * as `500ms`, `5s`. @example '2s'
   */
  databaseReadMaxLag: Type.String({ default: '5s', pattern: '^[0-9]+\\s*(ms|s|m)?$' }),
  /**
   * Milliseconds a read waits for a new connection to a replica before it goes to the primary
   * instead (and the replica is left alone for a while): a replica whose host is gone costs a
   * request no more than this. @example 500
   */
  databaseReadConnectTimeout: Type.Integer({ default: 1000, minimum: 1, maximum: 60_000 }),
  /**
   * Milliseconds the migrations at start wait for any one lock before the start fails: another
   * instance migrating the same database (they take turns under a transaction-level advisory lock,
   * which holds through PgBouncer in transaction mode), or a long transaction on a table a migration
   * changes. Raise it when a release's migrations take longer on your data. @example 300000
   */
  migrationLockTimeout: Type.Integer({ default: 60_000, minimum: 1, maximum: 86_400_000 }),
  /** Where the embedded database lives; `memory://` for a throw-away one. @example './.data' */
  dataDir: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * The server's own (`npm start`, `node dist/server.js`): an ES module whose `resources` export
   * lists the host's resources (`defineResource` results or plain declarations) and whose optional
   * `migrations` export makes their tables. A host application passes them to `tandem` instead.
   * @example './resources.js'
   */
  resourcesModule: Type.Optional(Type.String({ minLength: 1 })),
  /** Secret that signs access tokens and list cursors. @example 'a long random string' */
  jwtSecret: Type.Optional(Type.String({ minLength: 16 })),
  /** Access-token lifetime: seconds or a duration such as `15m`, `2h`, `1d`. @example '15m' */
  jwtExpiresIn: Type.String({ default: '15m', pattern: '^[0-9]+\\s*(ms|s|m|h|d)?$' }),
  /** @example 'admin@example.com' */
  adminEmail: Type.Optional(Type.String({ format: 'email' })),
  /** @example 'correct horse battery staple' */
  adminPassword: Type.Optional(Type.String({ minLength: 8 })),
  /** Emails with a one-time token (verify, reset) a user may be sent per hour, of each kind. @example 3 */
  oneTimeEmailsPerHour: Type.Integer({ default: 3, minimum: 1 }),
  /**
   * How long the device token a sign-in answers stays valid: sent back with a later sign-in of the same
   * account, it lets that client in while failures from elsewhere lock the account (OWASP's device
   * cookies). Seconds or a duration such as `30d`. @example '30d'
   */
  loginDeviceTokenLifetime: Type.String({ default: '30d', pattern: '^[0-9]+\\s*(ms|s|m|h|d)?$' }),
  /**
   * Failed sign-ins with one device token in the per-account window (15 minutes) after which that
   * token is no longer trusted: its client is then held to the account's limit like any other. @example 10
   */
  loginDeviceFailures: Type.Integer({ default: 10, minimum: 1 }),
  /**
   * Milliseconds a client has to send a whole request (headers and body); a slower one is answered
   * 408 and its connection closed. 0: no limit. @example 30000
   */
  requestTimeout: Type.Integer({ default: 30_000, minimum: 0 }),
  /**
   * Milliseconds the event loop may lag, on average over a second, before new requests are answered
   * 503 with `Retry-After` instead of waiting their turn (`/health` still answers). 0: off. @example 500
   */
  overloadMaxEventLoopDelay: Type.Integer({ default: 1000, minimum: 0 }),
  /**
   * Requests waiting for a connection of a real server's pool (`databaseUrl`) beyond which new
   * requests are answered 503 with `Retry-After`. 0: off. @example 100
   */
  overloadMaxPoolWaiting: Type.Integer({ default: 500, minimum: 0 }),
  /**
   * Where client addresses come from behind a reverse proxy (Fastify's `trustProxy`): the number of
   * proxies in front (each appends the address it saw to `X-Forwarded-For`), or a comma-separated
   * list of their addresses or CIDRs. Unset: the socket's address, and `X-Forwarded-For` is ignored.
   * `true` (trust every hop) is refused: the left-most entry is whatever the client sent, so every
   * client could choose its address and step around the per-address limits. @example '10.0.0.0/8,127.0.0.1'
   */
  trustProxy: Type.Optional(Type.String({ minLength: 1, pattern: '^(false|[0-9]+|[0-9A-Fa-f:.]+(/[0-9]+)?(\\s*,\\s*[0-9A-Fa-f:.]+(/[0-9]+)?)*)$' })),
  /**
   * Rows one bulk write may touch (CONTRACT §14): the items of an array `POST` (and of GraphQL's
   * `create<Plural>(inputs:)`), and the rows a `PATCH`/`DELETE` by filter may match. More items are a
   * 400 before any is looked at; more matching rows a 422, nothing changed. @example 500
   */
  bulkMaxItems: Type.Integer({ default: 100, minimum: 1, maximum: 10_000 }),
  /** Requests per window per caller. @example 1000 */
  rateLimitMax: Type.Integer({ default: 1000, minimum: 1 }),
  /** @example '1 minute' */
  rateLimitWindow: Type.String({ default: '1 minute', minLength: 1 }),
  /** Shares rate-limit counters and subscription events between instances. @example 'redis://127.0.0.1:6379' */
  redisUrl: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  /** @example 8 */
  graphqlMaxDepth: Type.Integer({ default: 8, minimum: 1 }),
  /** @example 10000 */
  graphqlMaxComplexity: Type.Integer({ default: 10000, minimum: 1 }),
  /** @example false */
  graphqlPersistedOnly: Type.Boolean({ default: false }),
  /** Subscriptions one WebSocket connection may hold at once. @example 50 */
  graphqlMaxSubscriptions: Type.Integer({ default: 50, minimum: 1 }),
  /**
   * Bytes the caches of parsed GraphQL documents may hold, counting every entry as the largest a
   * document may be. @example 134217728
   */
  graphqlDocumentCacheBytes: Type.Integer({ default: 128 * 1024 * 1024, minimum: 8 * 1024 * 1024 }),
  /**
   * Bytes the variables of one GraphQL operation may take, written as JSON; larger ones are refused
   * (`BAD_USER_INPUT`) before anything reads them. The default takes the largest built-in input (a
   * post of 100,000 characters); raise it for larger inputs of your own. @example 1048576
   */
  graphqlMaxVariablesBytes: Type.Integer({ default: 512 * 1024, minimum: 1024 }),
  /**
   * Answer GraphQL introspection (`__schema`, `__type`) and add graphql-js's "Did you mean …?"
   * suggestions to error messages; both show the schema to anyone who asks. Unset: on, except when
   * `nodeEnv` is `production` (introspection is then `INTROSPECTION_DISABLED`). GraphiQL needs it.
   * @example true
   */
  graphqlIntrospection: Type.Optional(Type.Boolean()),
  /**
   * Serve `GET /metrics` (Prometheus text: requests, GraphQL operations, the pool, rate limiting,
   * the event loop, subscriptions) on the API's own port. Off: no metric is collected. @example true
   */
  metrics: Type.Boolean({ default: false }),
  /**
   * Serve `GET /metrics` on this port instead, on a listener of its own at `host`, closed with the
   * application: the API's port never answers it, so a proxy that forwards only that port keeps
   * metrics private. Setting it turns metrics on. 0: a free port. @example 9464
   */
  metricsPort: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  /**
   * Who may read `GET /metrics` on the API's own port (`metrics`): a comma-separated list of
   * addresses and CIDRs. The socket's peer must be in it, and so must every `X-Forwarded-For` entry,
   * whatever `trustProxy` says: a header cannot make an outsider local, and a proxy in the list does
   * not open the endpoint to the clients behind it. Anyone else gets the answer of an unknown route.
   * `metricsPort`'s listener is not filtered (keep that port private). @example '127.0.0.0/8,::1,10.0.0.0/8'
   */
  metricsAllow: Type.String({ default: '127.0.0.0/8,::1', minLength: 1 }),
  /**
   * OpenTelemetry: the OTLP/HTTP collector (`http://collector:4318`) that the server entry point sends
   * traces to; set, every plugin traces through the global tracer provider. A plugin never exports
   * spans itself: an application that registers the plugins starts its own OpenTelemetry SDK (which
   * reads the same variable), or passes `tracing` to `tandem`. @example 'http://127.0.0.1:4318'
   */
  otelExporterOtlpEndpoint: Type.Optional(Type.String({ pattern: '^https?://' })),
  /** pino level. @example 'info' */
  logLevel: StringEnum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, { default: 'info' }),
  /**
   * How the server entry point writes its log: `json` (pino's lines, one object each) or `pretty`
   * (pino-pretty, for people). Unset: `pretty` when stdout is a terminal and `nodeEnv` is not
   * `production`, else `json`. @example 'json'
   */
  logFormat: Type.Optional(StringEnum(['json', 'pretty'] as const)),
  /** `production` hides development aids and requires `jwtSecret`. @example 'production' */
  nodeEnv: Type.String({ default: 'development' }),
  /**
   * Browser origins allowed to call the API (CORS): a comma-separated list, or `*` for any.
   * Unset: no CORS headers at all. @example 'https://app.example.com, https://admin.example.com'
   */
  corsOrigins: Type.Optional(Type.String({ pattern: '^\\s*(\\*|https?://[^\\s,/]+(\\s*,\\s*https?://[^\\s,/]+)*)\\s*$' }))
}, { additionalProperties: false })

export type TandemConfig = Static<typeof TandemOptionsSchema>
/** What a caller may pass: every option is optional and has the environment's default. */
export type TandemOptions = Partial<TandemConfig>
