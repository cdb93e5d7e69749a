import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { getOperationAST, Location, type DocumentNode } from 'graphql'
import { OPERATION_LABELS, type TandemMetrics } from '../plugins/metrics.js'

type ErrorHandler = (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => Promise<void>
interface HookContext { reply?: FastifyReply }

/** The `operationName` a request sent, in its body or (GET) its query string. */
function requestedName (request: FastifyRequest): string | undefined {
  const params = (request.method === 'GET' ? request.query : request.body) as { operationName?: unknown } | null | undefined
  return typeof params?.operationName === 'string' ? params.operationName : undefined
}

/**
 * Counts each GraphQL request over HTTP once: `ok` when it answered without errors, else `error`
 * (a failed field, a refused document, a rate limit). Under the name of its operation only when
 * that operation ran, having passed parsing, validation and every limit: a name is a series, and a
 * document anyone can make up (one that does not validate, say) must not take one of the
 * `MAX_OPERATION_NAMES`. A request refused before it ran counts as `OPERATION_LABELS.unknown`.
 */
export class OperationMetrics {
  readonly #metrics: TandemMetrics
  // Learnt from the parsed document: Mercurius's hooks are given it, its error handler is not.
  readonly #names = new WeakMap<FastifyRequest, string>()

  constructor (metrics: TandemMetrics) {
    this.#metrics = metrics
  }

  /** Adds the hooks to Mercurius. */
  addHooks (scope: FastifyInstance): void {
    // After validation (before execution of a document, fresh or cached, that passed it).
    scope.graphql.addHook('preExecution', async (_schema, document, context) => { this.#learn(document, context) })
    // Only an operation that ran resolves; a refusal (by validation or a later hook) goes to the error handler.
    scope.graphql.addHook('onResolution', async (execution, context) => {
      const request = (context as HookContext).reply?.request
      const name = request === undefined ? undefined : this.#names.get(request)
      this.#metrics.graphqlOperation(name ?? OPERATION_LABELS.unknown, (execution.errors?.length ?? 0) > 0 ? 'error' : 'ok')
    })
  }

  /** Mercurius's `errorHandler` that also counts the refusal, without the name the request gave. */
  errorHandler (handler: ErrorHandler): ErrorHandler {
    return async (error, request, reply) => {
      this.#metrics.graphqlOperation(OPERATION_LABELS.unknown, 'error')
      await handler(error, request, reply)
    }
  }

  #learn (document: DocumentNode, context: HookContext): void {
    const request = context.reply?.request
    // Mercurius takes a query that is JSON for a ready-made document: only GraphQL text has a name.
    if (request === undefined || this.#names.has(request) || !((document as DocumentNode | null)?.loc instanceof Location)) return
    const operation = getOperationAST(document, requestedName(request))
    this.#names.set(request, operation === null || operation === undefined ? OPERATION_LABELS.unknown : operation.name?.value ?? OPERATION_LABELS.anonymous)
  }
}
