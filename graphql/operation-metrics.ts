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
 * Counts each GraphQL request over HTTP once, by the name of the operation it ran: `ok` when it
 * answered without errors, else `error` (a failed field, a refused document, a rate limit).
 */
export class OperationMetrics {
  readonly #metrics: TandemMetrics
  // Learnt from the parsed document: Mercurius's hooks are given it, its error handler is not.
  readonly #names = new WeakMap<FastifyRequest, string>()

  constructor (metrics: TandemMetrics) {
    this.#metrics = metrics
  }

  /** Adds the hooks to Mercurius; before any other hook, so that a refusal of theirs has the name. */
  addHooks (scope: FastifyInstance): void {
    // Before validation for a document Mercurius has not seen; before execution for a cached one.
    scope.graphql.addHook('preValidation', async (_schema, document, context) => { this.#learn(document, context) })
    scope.graphql.addHook('preExecution', async (_schema, document, context) => { this.#learn(document, context) })
    scope.graphql.addHook('onResolution', async (execution, context) => {
      const request = (context as HookContext).reply?.request
      const name = request === undefined ? undefined : this.#names.get(request)
      this.#metrics.graphqlOperation(name ?? OPERATION_LABELS.unknown, (execution.errors?.length ?? 0) > 0 ? 'error' : 'ok')
    })
  }

  /** Mercurius's `errorHandler` that also counts the failure. */
  errorHandler (handler: ErrorHandler): ErrorHandler {
    return async (error, request, reply) => {
      this.#metrics.graphqlOperation(this.#names.get(request) ?? OPERATION_LABELS.unknown, 'error')
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
