import type { FastifyInstance, FastifyRequest, FastifySchema } from 'fastify'
import fp from 'fastify-plugin'
import { getOperationAST, Kind, Location, parse, specifiedRules, validate, type DocumentNode, type GraphQLSchema } from 'graphql'
import mercurius, { type IResolvers, type MercuriusContext } from 'mercurius'
import type { TandemOptions } from '../schema/options.js'
import type { AccessUser } from '../plugins/auth.js'
import { useConfig } from '../plugins/config.js'
import { requestWrote } from '../plugins/database.js'
import events from '../plugins/events.js'
import { validatorCompiler } from '../plugins/ajv.js'
import { REFRESH_MS } from '../plugins/revocations.js'
import { bearerOfPayload, type TandemGraphqlContext } from './context.js'
import { clientError, codes, errorFormatter, errorHandler, GraphqlRequestError, withoutSuggestions, type FormatOptions } from './errors.js'
import { graphiqlPage, graphiqlServed } from './graphiql.js'
import { documentCacheEntries, MAX_DOCUMENT_BYTES, MAX_DOCUMENT_TOKENS, overLimits, oversized } from './documents.js'
import { complexityLimit, depthLimit, mutationLimit } from './limits.js'
import { introspectionDisabled } from './introspection.js'
import { VariableCheck } from './variables.js'
import { PersistedQueryStore } from './persisted.js'
import { relationPlanner } from './relations.js'
import { listArguments, type ListArguments } from './list-arguments.js'
import { compiledAnswers } from './compiled.js'
import { AnsweredDocuments } from './answered-documents.js'
import { plannedTypes } from './planned-types.js'
import { declaredResolvers } from './declared.js'
import { declaredAnswers } from './declared-answers.js'
import { resolvers } from './resolvers.js'
import { servedResources } from '../rules/built-in-resources.js'
import { servedResourceOf } from '../rules/served-resources.js'
import type { ServedResource } from '../rules/served-resource.js'
import { resourceSdl } from '../schema/resource-sdl.js'
import type { Resource } from '../schema/resource.js'
import { loadSchema, schemaDirectory } from './schema.js'
import { OperationMetrics } from './operation-metrics.js'
import { repeatedFields } from './repeated-fields.js'
import { SocketGate, type GatedSocket } from './socket-gate.js'
import { SubscriptionTokens, type SubscriptionSocket } from './subscription-tokens.js'

export type { TandemGraphqlContext } from './context.js'
export { complexityLimit, depthLimit, mutationLimit } from './limits.js'
export { MAX_DOCUMENT_BYTES, MAX_DOCUMENT_TOKENS }

/** The built-in resolvers with the declared resources' root fields added to `Query` and `Mutation`, and their types' field resolvers. */
function mergedResolvers<C> (builtIn: IResolvers<unknown, C>, declared: IResolvers<unknown, C>): IResolvers<unknown, C> {
  return {
    ...builtIn,
    ...declared,
    Query: { ...builtIn.Query as object, ...declared.Query as object },
    Mutation: { ...builtIn.Mutation as object, ...declared.Mutation as object },
    Subscription: { ...builtIn.Subscription as object, ...declared.Subscription as object }
  }
}

const notGraphqlText = () => clientError('Syntax Error: the query is not a GraphQL document', codes.parseFailed)

/** Where the query style is served, at the application's root. */
const GRAPHQL_PATH = '/graphql'
/** What GraphQL executes in place of a query the database answered: the answer is that text, not this. */
const TYPENAME_ONLY = parse('{ __typename }')

/** Runs of a document after which graphql-jit compiles it. */
export const DEFAULT_JIT = 10

/** Root fields of one mutation; `login` and `createUser` (which hash passwords) once each. */
export const MUTATION_LIMITS = { maxFields: 10, once: ['login', 'createUser'] } as const

/** What a WebSocket has to send `connection_init` in, by default (graphql-ws's `connectionInitWaitTimeout`). */
export const CONNECTION_INIT_WAIT_MS = 10_000

/**
 * Mercurius fails with a 500 on some GET parameters (`variables=1`, an `operationName` the document
 * lacks, several operations without one): they are checked before it reads them.
 */
function checkGetParameters (query: Record<string, unknown>): void {
  for (const name of ['variables', 'extensions']) {
    const raw = query[name]
    let value: unknown = null
    try { value = typeof raw === 'string' ? JSON.parse(raw) : null } catch {}
    if (value !== null && (typeof value !== 'object' || Array.isArray(value))) {
      throw Object.assign(new Error(`not a GraphQL request: ${name} must be a JSON object`), { statusCode: 400 })
    }
  }
  if (typeof query.query !== 'string') return
  const tooLarge = oversized(query.query)
  if (tooLarge !== undefined) throw tooLarge
  let document: DocumentNode
  try { document = parse(query.query, { maxTokens: MAX_DOCUMENT_TOKENS }) } catch { return }
  const operationName = typeof query.operationName === 'string' ? query.operationName : undefined
  if (getOperationAST(document, operationName) === null) {
    throw clientError(operationName === undefined ? 'Must provide operation name if query contains multiple operations.' : `Unknown operation named "${operationName}".`, codes.badUserInput)
  }
}

/**
 * What an HTTP request sent for the operation Mercurius runs: its body (or, batched, its item) or
 * its query string. Undefined without a request (the application's own `app.graphql(…)` calls).
 */
function sentOperation (context: MercuriusContext): { variables?: unknown, operationName?: unknown } | undefined {
  const request = context.reply?.request as FastifyRequest | undefined
  if (request === undefined) return undefined
  let sent = (request.method === 'GET' ? request.query : request.body) as unknown
  if (Array.isArray(sent)) sent = sent[context.operationId ?? 0]
  return sent === null || typeof sent !== 'object' ? undefined : sent
}

/** The `variables` and `operationName` a request sent, read as Mercurius reads them; undefined without variables. */
function sentVariables (context: MercuriusContext): { variables: unknown, operationName: unknown } | undefined {
  const { variables, operationName } = sentOperation(context) ?? {}
  if (variables === undefined || variables === null || variables === '') return undefined
  if (typeof variables !== 'string') return { variables, operationName }
  // GET: JSON text, already found to be an object by checkGetParameters.
  try { return { variables: JSON.parse(variables) as unknown, operationName } } catch { return undefined }
}

const usesVariables = (document: DocumentNode): boolean =>
  document.definitions.some((definition) => definition.kind === Kind.OPERATION_DEFINITION && (definition.variableDefinitions?.length ?? 0) > 0)

/** The options of the GraphQL plugin besides Tandem's shared ones. */
export interface GraphqlOwnOptions {
  /**
   * Serve GraphiQL at `/graphiql`, its scripts and styles from the API itself (the `graphiql`,
   * `react` and `react-dom` packages, optional peers that the host installs), so it works offline.
   * Default: on when those are installed (else off, with a warning), except when `nodeEnv` is
   * `production` or `graphqlPersistedOnly` is set; `true` without them stops the start. It reads
   * the schema by introspection: in production, serve it only with `graphqlIntrospection` on.
   * @example false
   */
  graphiql?: boolean
  /**
   * Compile a document with graphql-jit once it has run this many times (Mercurius `jit`); 0
   * never compiles. Default: 10. Compiled, a repeated document runs faster than graphql-js
   * interprets it, most of all a deeply nested one (see PERFORMANCE-DECISIONS.md, 'graphql-jit').
   * @example 0
   */
  jit?: number
  /**
   * The folder of the `.graphql` SDL files. Default: the package's `schema/graphql/`.
   * @example new URL('./my-schema/', import.meta.url)
   */
  schemaDirectory?: URL
  /** Persisted documents kept in memory in front of PostgreSQL. Default: 1000. @example 5000 */
  persistedQueryCacheSize?: number
  /**
   * Documents learnt from clients (automatic persisted queries) kept in PostgreSQL at most; past
   * it, the least recently used are dropped (their clients send them again). Registered documents
   * do not count. Default: 10000. @example 50000
   */
  persistedQueryLimit?: number
  /**
   * Bytes the documents learnt from clients may take in PostgreSQL in all; past it, the least
   * recently used are dropped. Default: 16 MiB. @example 67108864
   */
  persistedQueryBytes?: number
  /**
   * Milliseconds a WebSocket has to send `connection_init` before it is closed with 4408.
   * Default: 10000. @example 3000
   */
  connectionInitWaitTimeout?: number
}

export interface GraphqlOptions extends TandemOptions, GraphqlOwnOptions {
  /** Resources declared with `defineResource`, served beside the built-in ones. @example [labels] */
  resources?: readonly Resource[]
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Tandem's GraphQL: the store of persisted queries, to register documents ahead of time. */
    tandemGraphql: {
      /** Stores a document for automatic persisted queries (and for `graphqlPersistedOnly`); returns its SHA-256 hash. */
      persist: (query: string) => Promise<string>
    }
  }
}

async function graphql (app: FastifyInstance, options: GraphqlOptions): Promise<void> {
  const { graphiql, jit, schemaDirectory: directory, persistedQueryCacheSize, persistedQueryLimit, persistedQueryBytes, connectionInitWaitTimeout, resources = [], ...tandemOptions } = options
  const config = useConfig(app, tandemOptions)
  // First: GraphiQL asked for without its packages stops the start before anything else is done.
  const withGraphiql = graphiqlServed(graphiql, config.nodeEnv !== 'production' && !config.graphqlPersistedOnly, app.log)
  if (!app.hasDecorator('accessTokens')) throw new Error('register Tandem\'s auth plugin before its GraphQL plugin')
  if (!app.hasDecorator('tandemEvents')) await app.register(events, tandemOptions)

  for (const [name, value] of Object.entries({ persistedQueryCacheSize, persistedQueryLimit, persistedQueryBytes, connectionInitWaitTimeout })) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) throw new Error(`${name} must be a positive integer`)
  }
  const store = new PersistedQueryStore(app.db, { cacheSize: persistedQueryCacheSize, learntLimit: persistedQueryLimit, learntBytes: persistedQueryBytes })
  app.decorate('tandemGraphql', { persist: async (query: string) => store.save(query) })
  const persistedOnly = config.graphqlPersistedOnly
  // Introspection and graphql-js's "Did you mean …?" suggestions both show the schema: one setting.
  const introspection = config.graphqlIntrospection ?? config.nodeEnv !== 'production'
  const formatting: FormatOptions = { suggestions: introspection }
  const variableCheck = new VariableCheck({ maxBytes: config.graphqlMaxVariablesBytes })
  // The live schema, once Mercurius has it (subscriptions' variables are checked against it).
  let liveSchema: (() => GraphQLSchema) | undefined
  // The declared resources' SDL comes from their declarations, the built-in ones' too (readable as
  // files in schema/graphql/declared/, which the tests check against them).
  const served = servedResources(resources)
  const schema = `${await loadSchema(directory ?? schemaDirectory)}\n${resourceSdl(served)}`
  // The one relation engine, for the users and every declared resource; the declared root fields' answers through it.
  const types = plannedTypes(served)
  // A nested list's filters and orderBy, as its target's served resource narrows them for the viewer.
  const listed = new Map<Resource, { arguments: ListArguments, served: ServedResource }>()
  const planner = relationPlanner(types, (target, viewer, args) => {
    let list = listed.get(target)
    if (list === undefined) listed.set(target, list = { arguments: listArguments(target), served: servedResourceOf(app, target, served) })
    return list.served.listing(viewer, list.arguments.query(args))
  })
  const answers = declaredAnswers(planner)
  const declared = declaredResolvers(served, (resource) => servedResourceOf(app, resource, served), answers)
  const compiled = compiledAnswers(types, served, (resource) => servedResourceOf(app, resource, served), declared.Query as Readonly<Record<string, unknown>>)
  // Only while tracing is on (plugins/tracing.ts): otherwise no wrapper and no hook of it is added.
  const tracing = app.hasDecorator('tandemTracer') ? (await import('./tracing.js')).operationTracing(app.tandemTracer, GRAPHQL_PATH) : undefined

  // The cost depends on the variables (`limit: $n`), so it is checked once they are known.
  // Without variables a document always costs the same, and Mercurius hands every request that sends
  // the same text the same parsed document: such a document is checked once, not on every request
  // (see PERFORMANCE-DECISIONS.md, 'Cost check once per document without variables').
  const withinLimit = new WeakSet<DocumentNode>()
  const complexity = (executable: GraphQLSchema, document: DocumentNode, variables: Record<string, unknown> | undefined) => {
    if (withinLimit.has(document)) return
    const errors = validate(executable, document, [complexityLimit({ maximum: config.graphqlMaxComplexity, variables })])
    if (errors.length > 0) throw new GraphqlRequestError(errors)
    if (!usesVariables(document)) withinLimit.add(document)
  }
  const plainAnswers = new WeakSet<DocumentNode>()
  const perResponseKey = (executable: GraphQLSchema, document: DocumentNode, variables: Record<string, unknown>) => {
    if (plainAnswers.has(document)) return false
    if (planner.answersPerResponseKeyIn(executable, document, variables)) return true
    if (!usesVariables(document)) plainAnswers.add(document)
    return false
  }
  // Checked as often as the revocations are read: checking more often would not see other
  // instances' revocations any sooner.
  const subscriptionTokens = new SubscriptionTokens(async (token) => app.accessTokens.verify(token), app.log)
  // Expiry is caught by the periodic check; a revocation, here or read from another instance, at once.
  subscriptionTokens.start(REFRESH_MS)
  app.accessTokens.onRevocation(() => { subscriptionTokens.check() })
  app.addHook('onClose', async () => { await subscriptionTokens.stop() })
  const gate = new SocketGate({
    initTimeoutMs: connectionInitWaitTimeout ?? CONNECTION_INIT_WAIT_MS,
    maxSubscriptions: config.graphqlMaxSubscriptions,
    checkRequest: ({ query, variables, operationName }) => {
      const tooLarge = overLimits(query)
      if (tooLarge !== undefined) return [tooLarge]
      if (liveSchema === undefined) throw new Error('graphql: a subscription arrived before the schema was built')
      return variableCheck.check(liveSchema(), query, variables, operationName)
    },
    limitCall: async (connection, token) => {
      if (!app.hasDecorator('tandemLimitCall')) return undefined
      // A token that no longer passes counts as anonymous, by address.
      const user = token === undefined ? undefined : await app.accessTokens.verify(token).then((caller) => caller.sub, () => undefined)
      return app.tandemLimitCall(connection, user)
    },
    log: app.log
  })
  // Counted only when Tandem's metrics are on (registered before this plugin).
  const metrics = app.hasDecorator('tandemMetrics') ? app.tandemMetrics : undefined
  metrics?.countSubscriptions(() => gate.open)
  const operationMetrics = metrics === undefined ? undefined : new OperationMetrics(metrics)
  const refuseUnknown = async (source: string) => {
    const tooLarge = oversized(source)
    if (tooLarge !== undefined) throw tooLarge
    if (persistedOnly && !await store.has(source)) {
      throw clientError('only persisted queries may run on this server', codes.forbidden)
    }
  }

  /** What resolvers and loaders get of a request (and the answers made before Mercurius reads it): its caller, authenticated once, when asked. */
  const contextOf = (request: FastifyRequest) => {
    let caller: Promise<AccessUser> | undefined
    return { viewer: () => (caller ??= app.accessTokens.authenticate(request)) }
  }
  // Requests whose answer before Mercurius met a database fault (a few: a set of them is cheap to ask, not to fill on every request).
  const faulted = new WeakSet<FastifyRequest>()
  // A traced operation is named and timed by Mercurius's hooks, and a persisted-only server checks
  // every document against its store: both go through Mercurius on every request.
  const answered = tracing === undefined && !persistedOnly ? new AnsweredDocuments(documentCacheEntries(config.graphqlDocumentCacheBytes)) : undefined

  const handleError: typeof errorHandler = async (error, request, reply) => { await errorHandler(error, request, reply, formatting) }

  // Fails closed: if a Mercurius upgrade moves its WebSocket handler, the application refuses to
  // start rather than serve subscriptions without the gate's limits.
  let gated = false
  // An encapsulated scope without a prefix: /graphql sits at the root of the application, and
  // Mercurius's decorators, content-type parser and error handler stay inside.
  await app.register(async (scope) => {
    if (app.hasDecorator('tandemRateLimit')) scope.addHook('onRequest', app.tandemRateLimit)
    // JSON bodies are validated as sent (`{"query": 42}` is not a GraphQL request), and only
    // JSON and application/graphql are read: anything else is 415.
    scope.setValidatorCompiler(validatorCompiler)
    scope.removeContentTypeParser(['text/plain'])
    // The resource style's OpenAPI document does not describe the query style.
    scope.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true } as FastifySchema
      // Seen before @fastify/websocket (registered by Mercurius, later) takes the handler.
      const subscriptions = route as { wsHandler?: (socket: GatedSocket, request: FastifyRequest) => unknown }
      if (subscriptions.wsHandler !== undefined) {
        subscriptions.wsHandler = gate.wrap(subscriptions.wsHandler)
        gated = true
      }
    })
    if (tracing !== undefined) scope.addHook('onRoute', tracing.onRoute)
    scope.addHook('preHandler', async (request, reply) => {
      if (request.routeOptions.url !== GRAPHQL_PATH) return
      if (request.method === 'GET') checkGetParameters(request.query as Record<string, unknown>)
      // A document the database answered alone before, sent again as it was: answered here, without Mercurius.
      const schema = liveSchema?.()
      const found = schema === undefined ? undefined : answered?.sentBy(request, schema)
      if (schema === undefined || found === undefined) return
      const text = await compiled.answer(schema, found.document, undefined, contextOf(request)).catch(() => {
        // A database fault: GraphQL executes the query, without asking the database alone again first.
        faulted.add(request)
        return undefined
      })
      if (text === undefined) return
      metrics?.graphqlOperation(found.operationName, 'ok')
      return await reply.type('application/json; charset=utf-8').send(text)
    })
    // Mercurius's own GraphiQL loads its scripts from a CDN: this one is served by the API.
    if (withGraphiql) {
      if (!introspection) app.log.warn('GraphiQL is served but introspection is off (graphqlIntrospection, GRAPHQL_INTROSPECTION): it will show no schema')
      await graphiqlPage(scope)
    }
    await scope.register(mercurius, {
      schema,
      resolvers: mergedResolvers(resolvers(), declared) as never,
      path: GRAPHQL_PATH,
      ...(tracing === undefined ? {} : { additionalRouteOptions: tracing.routeOptions }),
      graphiql: false,
      ...(jit === 0 ? {} : { jit: jit ?? DEFAULT_JIT }),
      allowBatchedQueries: false,
      graphql: { parseOptions: { maxTokens: MAX_DOCUMENT_TOKENS } },
      // Mercurius's caches count entries; larger documents are refused before they reach them.
      cache: documentCacheEntries(config.graphqlDocumentCacheBytes),
      validationRules: [depthLimit(config.graphqlMaxDepth), mutationLimit(MUTATION_LIMITS), ...introspection ? [] : [introspectionDisabled]],
      persistedQueryProvider: store.provider(!persistedOnly),
      context: contextOf,
      errorFormatter: ((execution, context) => errorFormatter(execution, context, formatting)) satisfies typeof errorFormatter as never,
      errorHandler: operationMetrics === undefined ? handleError : operationMetrics.errorHandler(handleError),
      subscription: {
        emitter: app.tandemEvents.emitter,
        // A subscription needs the token in `connection_init`: `{authorization: "Bearer …"}`.
        // Mercurius calls this with its connection as `this`: a refusal closes the socket with
        // 4403 Forbidden, as graphql-transport-ws asks (Mercurius alone would close without a code).
        // Once accepted, the socket is closed with 4401 when the token expires or is revoked.
        onConnect: async function (this: { socket?: SubscriptionSocket & { protocol?: string } } | undefined, { payload }: { payload: unknown }) {
          const token = bearerOfPayload(payload)
          if (token === undefined || !await app.accessTokens.verify(token).then(() => true, () => false)) {
            if (this?.socket?.protocol === 'graphql-transport-ws') this.socket.close(4403, 'Forbidden')
            return false
          }
          if (this?.socket !== undefined) subscriptionTokens.watch(this.socket, token)
          // Checked again (expiry, revocation) each time the connection subscribes.
          return { viewer: async () => app.accessTokens.verify(token) }
        }
      }
    })

    liveSchema = () => scope.graphql.schema
    if (!gated) throw new Error('graphql: the subscription WebSocket handler was not found to guard (has Mercurius changed?); refusing to start')
    operationMetrics?.addHooks(scope)

    // Before the limits below, so that an operation refused by them is named too.
    if (tracing !== undefined) {
      scope.graphql.addHook('preExecution', tracing.preExecution)
      scope.graphql.addHook('onResolution', tracing.onResolution)
    }

    // Mercurius does not validate subscriptions itself: the same rules as for queries.
    const rules = [...specifiedRules, depthLimit(config.graphqlMaxDepth), complexityLimit({ maximum: config.graphqlMaxComplexity }), ...introspection ? [] : [introspectionDisabled]]
    scope.graphql.addHook('preSubscriptionParsing', async (_schema, source) => { await refuseUnknown(source) })
    scope.graphql.addHook('preSubscriptionExecution', async (schema, document) => {
      if (!((document as DocumentNode | null)?.loc instanceof Location)) throw notGraphqlText()
      const repeated = repeatedFields(document)
      if (repeated !== undefined) throw repeated
      const [first] = validate(schema, document, rules)
      if (first !== undefined) throw first.extensions.code === undefined ? clientError(introspection ? first.message : withoutSuggestions(first.message), codes.validationFailed) : first
    })
    scope.graphql.addHook('preParsing', async (schema, source, context) => {
      await refuseUnknown(source)
      // Variables reach graphql-js (or graphql-jit) right after this hook, for a document Mercurius
      // has cached as for a new one: they are checked here, on every path over HTTP (GET, POST,
      // persisted queries), before any coercion. A request without variables pays nothing.
      const sent = sentVariables(context)
      if (sent === undefined) return
      const refusal = variableCheck.check(schema, source, sent.variables, sent.operationName)
      if (refusal !== undefined) throw new GraphqlRequestError(refusal)
    })
    scope.graphql.addHook('preValidation', async (_schema, document) => {
      // Mercurius would take a query that is JSON as a ready-made AST (or null); only GraphQL text is accepted.
      if (!((document as DocumentNode | null)?.loc instanceof Location)) throw notGraphqlText()
      // Before graphql-js's rules, whose merge check is quadratic in a repeated field.
      const repeated = repeatedFields(document)
      if (repeated !== undefined) throw repeated
    })
    scope.graphql.addHook('preExecution', async (schema, document, context, variables) => {
      complexity(schema, document, variables ?? {})
      // A mutation's caller reads their write next (read replicas: plugins/database.ts).
      if (document.definitions.some((definition) => definition.kind === Kind.OPERATION_DEFINITION && definition.operation === 'mutation')) requestWrote(context.reply.request)
      // A query the database answers alone is sent as its text; GraphQL runs a document of `__typename` only instead.
      const text = context.reply === undefined || faulted.has(context.reply.request) ? undefined : await compiled.answer(schema, document, variables, context as TandemGraphqlContext, sentOperation(context)?.operationName).catch(() => undefined)
      if (text !== undefined) {
        answered?.remember(schema, document)
        // A serializer of its own leaves the type unset: the one Fastify gives an object it serializes.
        context.reply.serializer(() => text).type('application/json; charset=utf-8')
        return { document: TYPENAME_ONLY }
      }
      // graphql-jit reads relations as plain properties; answers per response key need graphql-js.
      if (perResponseKey(schema, document, variables ?? {})) return { schema }
    })
  })
}

/**
 * The query style at `/graphql` (and GraphiQL at `/graphiql` outside production), over the same
 * data layer, tokens and events as the resource style: Mercurius with batched relation loads, depth and
 * complexity limits, automatic persisted queries kept in PostgreSQL, and subscriptions over
 * `graphql-transport-ws` fed by `app.tandemEvents`. Register it after Tandem's database and auth
 * plugins; it is mounted at the root, never under a prefix.
 * @example
 * await app.register(database, { databaseUrl })
 * await app.register(auth, { jwtSecret })
 * await app.register(graphql, { graphqlMaxDepth: 8, graphqlMaxComplexity: 10000 })
 */
export default fp(graphql, { name: 'tandem-graphql', fastify: '5.x', dependencies: ['tandem-database', 'tandem-auth'] })
