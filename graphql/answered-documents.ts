import type { FastifyRequest } from 'fastify'
import { getOperationAST, Location, type DocumentNode, type GraphQLSchema } from 'graphql'
import { OPERATION_LABELS } from '../plugins/metrics.js'

/** A document the database answered alone, and the name its operation is counted under. */
export interface AnsweredDocument {
  document: DocumentNode
  operationName: string
}

interface Remembered {
  schema: GraphQLSchema
  document: WeakRef<DocumentNode>
  operationName: string
}

/**
 * Documents the database answered alone (graphql/compiled.ts), by their text, so that a request
 * sending one of them again is answered before Mercurius reads it. Such a request passes exactly
 * what the first one passed: every check between the text and its execution (size, tokens,
 * validation, depth, repeated fields, and the cost of a document without variables) is decided by
 * the text and the schema alone, and the caller's own rules are applied again by the answer itself.
 * So only a request that adds nothing to the text is taken: no variables, no operation name, no
 * extension (a persisted query), one operation; anything else goes through Mercurius as before.
 *
 * The documents stay Mercurius's: they are held weakly, so that its caches' byte budget still
 * bounds what parsed documents take; one it has dropped is parsed and remembered again.
 */
export class AnsweredDocuments {
  readonly #limit: number
  readonly #documents = new Map<string, Remembered>()

  /** Keeps `limit` texts at most, the oldest dropped first. */
  constructor (limit: number) {
    this.#limit = limit
  }

  /** Notes that the database answered `document` alone for a request of `schema`. */
  remember (schema: GraphQLSchema, document: DocumentNode): void {
    if (!(document.loc instanceof Location) || document.definitions.length !== 1) return
    const operation = getOperationAST(document)
    if (operation == null || (operation.variableDefinitions?.length ?? 0) > 0) return
    const text = document.loc.source.body
    if (this.#documents.has(text)) return
    if (this.#documents.size >= this.#limit) this.#documents.delete(this.#documents.keys().next().value as string)
    this.#documents.set(text, { schema, document: new WeakRef(document), operationName: operation.name?.value ?? OPERATION_LABELS.anonymous })
  }

  /** The remembered document that `request` sends and nothing more, for `schema`; else undefined. */
  sentBy (request: FastifyRequest, schema: GraphQLSchema): AnsweredDocument | undefined {
    if (request.validationError !== undefined) return undefined
    const sent = request.method === 'GET' ? request.query : request.method === 'POST' ? request.body : undefined
    if (sent === null || typeof sent !== 'object' || Array.isArray(sent)) return undefined
    const { query, variables, operationName, extensions, ...others } = sent as Record<string, unknown>
    if (typeof query !== 'string' || !absent(variables) || (operationName ?? null) !== null || extensions !== undefined || Object.keys(others).length > 0) return undefined
    const remembered = this.#documents.get(query)
    if (remembered === undefined || remembered.schema !== schema) return undefined
    const document = remembered.document.deref()
    if (document === undefined) {
      this.#documents.delete(query)
      return undefined
    }
    return { document, operationName: remembered.operationName }
  }
}

/** Variables that are not there: a client library sends `null` or `{}` for a document without any. */
function absent (variables: unknown): boolean {
  if (variables === undefined || variables === null) return true
  if (typeof variables === 'string') return variables === '' || variables === '{}'
  return typeof variables === 'object' && !Array.isArray(variables) && Object.keys(variables).length === 0
}
