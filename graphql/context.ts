import type { FastifyInstance } from 'fastify'
import type { MercuriusContext } from 'mercurius'
import type { AccessUser } from '../plugins/auth.js'

/**
 * What every resolver and loader receives, over HTTP and over WebSocket alike. Authentication
 * is lazy: public fields (`login`, `createUser`) never look at the token, the others call
 * `viewer()`, which answers the caller or throws UNAUTHENTICATED.
 */
export interface TandemGraphqlContext extends MercuriusContext {
  app: FastifyInstance
  /** The caller of a valid, unrevoked token; throws a 401 TandemError otherwise. Memoized per request. */
  viewer: () => Promise<AccessUser>
}

const BEARER = /^Bearer +([A-Za-z0-9_.~+/-]+=*) *$/i

/**
 * The token of a `connection_init` payload: `{authorization: "Bearer …"}` (any case of the key),
 * or the same inside `headers`, as some clients send it.
 */
export function bearerOfPayload (payload: unknown): string | undefined {
  if (payload === null || typeof payload !== 'object') return undefined
  const record = payload as Record<string, unknown>
  for (const source of [record, record.headers]) {
    if (source === null || typeof source !== 'object') continue
    for (const [key, value] of Object.entries(source)) {
      if (key.toLowerCase() === 'authorization' && typeof value === 'string') return BEARER.exec(value)?.[1]
    }
  }
  return undefined
}
