import { createHash } from 'node:crypto'
import type { FastifyInstance, FastifyRequest, onSendAsyncHookHandler, preHandlerAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import { claimKey, completeKey, releaseKey } from '../db/idempotency.js'
import { badRequest, conflict, unprocessable } from '../schema/errors.js'

const HEADER = 'idempotency-key'
const FIELD = 'Idempotency-Key'
const REPLAYED_HEADERS = ['location', 'etag', 'content-type'] as const

declare module 'fastify' {
  interface FastifyRequest {
    /** The Idempotency-Key this request claimed, to record its response. */
    idempotencyClaim: { scope: string, key: string } | null
  }
}

function requestHash (request: FastifyRequest): string {
  const path = request.url.split('?')[0] ?? ''
  return createHash('sha256').update(`${request.method} ${path}\n${JSON.stringify(request.body ?? null)}`).digest('base64url')
}

/**
 * `Idempotency-Key` on every POST: the same key with the same request within 24 h gets the first
 * response again, without a second write; with another request, 422. Kept in PostgreSQL, so it
 * holds across instances. Keys are per caller (user id when signed in).
 */
async function idempotency (app: FastifyInstance): Promise<void> {
  app.decorateRequest('idempotencyClaim', null)

  const check: preHandlerAsyncHookHandler = async (request, reply) => {
    const key = request.headers[HEADER]
    if (key === undefined) return
    if (typeof key !== 'string' || key.length === 0 || key.length > 255) {
      throw badRequest('Idempotency-Key must be 1 to 255 characters', FIELD)
    }
    const scope = request.user === undefined || request.user === null ? 'anonymous' : `user:${request.user.sub}`
    const claim = await claimKey(app.db, scope, key, requestHash(request))
    switch (claim.outcome) {
      case 'claimed':
        request.idempotencyClaim = { scope, key }
        return
      case 'mismatch':
        throw unprocessable('Idempotency-Key was already used for another request', FIELD)
      case 'in-progress':
        throw conflict('a request with this Idempotency-Key is still in progress; retry later', FIELD)
      case 'replay':
        return reply.code(claim.response.statusCode).headers({ ...claim.response.headers, 'idempotent-replayed': 'true' }).send(claim.response.body)
    }
  }

  const record: onSendAsyncHookHandler<unknown> = async (request, reply, payload) => {
    const claim = request.idempotencyClaim
    if (claim === null) return payload
    request.idempotencyClaim = null
    if (reply.statusCode >= 200 && reply.statusCode < 300 && (typeof payload === 'string' || payload === null || payload === undefined)) {
      const headers: Record<string, string> = {}
      for (const name of REPLAYED_HEADERS) {
        const value = reply.getHeader(name)
        if (typeof value === 'string') headers[name] = value
      }
      await completeKey(app.db, claim.scope, claim.key, { statusCode: reply.statusCode, headers, body: payload ?? '' })
    } else {
      await releaseKey(app.db, claim.scope, claim.key)
    }
    return payload
  }

  app.addHook('onRoute', (route) => {
    if (route.method !== 'POST' && !(Array.isArray(route.method) && route.method.includes('POST'))) return
    route.preHandler = [...[route.preHandler ?? []].flat(), check]
    route.onSend = [...[route.onSend ?? []].flat(), record]
  })
}

export default fp(idempotency, { name: 'tandem-idempotency', fastify: '5.x' })
