import { hkdfSync } from 'node:crypto'
import type { FastifyInstance, FastifyRequest, onResponseAsyncHookHandler, onSendAsyncHookHandler, preHandlerAsyncHookHandler } from 'fastify'
import fp from 'fastify-plugin'
import type { ControlledTransaction } from 'kysely'
import type { Db } from '../db/connect.js'
import { normalizeIP } from '@fastify/rate-limit'
import { hmacBase64url } from '../db/hmac.js'
import { addressScope, claimKey, completeKey, releaseKey, userScope } from '../db/idempotency.js'
import type { TandemDatabase } from '../db/types.js'
import { badRequest, conflict, unprocessable } from '../schema/errors.js'
import { useConfig } from './config.js'

const HEADER = 'idempotency-key'
const FIELD = 'Idempotency-Key'
const REPLAYED_HEADERS = ['location', 'etag', 'content-type'] as const

interface Claim {
  scope: string
  key: string
  /** The route writes through `request.writeDb()` in the key's transaction (`config.transaction`). */
  transactional: boolean
  /**
   * The key's transaction, once `request.writeDb()` opened it: the writes and the recorded response
   * commit together, or not at all.
   */
  trx: Promise<ControlledTransaction<TandemDatabase>> | undefined
  /** What waits for the commit (events of the write). */
  committed: Array<() => void>
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The POST handler writes only through `await request.writeDb()`: with an Idempotency-Key, its
     * writes and the record of its answer then share one transaction, which opens when the handler
     * asks for it. Before that, `app.db` is free to use (a declaration's prepare hooks run then);
     * after it, only the transaction: on the one connection of the embedded database a statement
     * through `app.db` would wait for it forever. Leave it out for handlers that write through
     * `app.db`.
     */
    transaction?: boolean
    /**
     * `false` on a POST whose answer holds a secret (a sign-in's access token): it is never stored
     * for replay, and an Idempotency-Key is ignored (sending it again simply runs it again).
     */
    replayable?: boolean
    /**
     * `true` on a PUT or DELETE route that takes an `Idempotency-Key` as every POST does (the link
     * writes of a manyToMany relation): the same key replays its first answer, another request is a 422.
     */
    idempotencyKey?: boolean
  }
  interface FastifyRequest {
    /** The Idempotency-Key this request claimed, to record its response. */
    idempotencyClaim: Claim | null
    /**
     * The database a POST handler writes with: on a route with `config.transaction` that claimed an
     * Idempotency-Key, the request's own transaction (its response is recorded in it), opened at the
     * first call, so that what runs before holds none; `app.db` otherwise.
     */
    writeDb: () => Promise<Db>
    /** Runs `fn` once the request's writes are committed: at once, or after the Idempotency-Key's transaction (dropped if it rolls back). */
    afterCommit: (fn: () => void) => void
  }
}

// Never part of a fingerprint, whatever the route's schema says.
const PASSWORD_FIELD = /password|passphrase/i

/**
 * The fields `schema` marks `writeOnly` (JSON Schema's annotation), at any depth: secrets a body
 * gives and no answer shows (a declaration's write-only inputs, the users' passwords).
 */
export function writeOnlyFields (schema: unknown, found = new Set<string>(), seen = new Set<object>()): Set<string> {
  if (typeof schema !== 'object' || schema === null || seen.has(schema)) return found
  seen.add(schema)
  const { properties, patternProperties, additionalProperties, items, prefixItems, anyOf, oneOf, allOf } = schema as Record<string, unknown>
  for (const [name, field] of Object.entries(properties ?? {})) {
    if ((field as { writeOnly?: unknown } | null)?.writeOnly === true) found.add(name)
  }
  const nested = [...Object.values(properties ?? {}), ...Object.values(patternProperties ?? {}), additionalProperties, items, prefixItems, anyOf, oneOf, allOf]
  for (const inner of nested.flat()) writeOnlyFields(inner, found, seen)
  return found
}

/**
 * What a key is held to: an HMAC, under a key of the server's (derived from `jwtSecret`, which
 * every instance shares), of the request's method, path and body without its secrets (the fields
 * in `secrets`, and any field named like a password, at any depth). Nothing stored with the key
 * tests a password guess: the password is not in it, and without the server's key nothing is.
 */
function fingerprint (key: string, request: FastifyRequest, secrets: ReadonlySet<string>): string {
  const path = request.url.split('?')[0] ?? ''
  const body = JSON.stringify(request.body ?? null, (field: string, value: unknown) => secrets.has(field) || PASSWORD_FIELD.test(field) ? undefined : value)
  return hmacBase64url(key, `${request.method} ${path}\n${body}`)
}

/**
 * `Idempotency-Key` on every POST (and a route that says `idempotencyKey`): the same key with the same request within 24 h gets the first
 * response again, without a second write; with another request, 422. Kept in PostgreSQL, so it
 * holds across instances. Keys are per caller (user id when signed in, else the client's address).
 * A request is told from another by its fingerprint, which leaves its secrets out (see `fingerprint`).
 */
async function idempotency (app: FastifyInstance): Promise<void> {
  // Fingerprints have a key of their own, derived from the signing secret as the outbox's is: every
  // instance has it, and nothing else signed with `jwtSecret` is ever a fingerprint.
  const fingerprintKey = Buffer.from(hkdfSync('sha256', useConfig(app, {}).jwtSecret, '', 'tandem idempotency fingerprint', 32)).toString('base64url')
  app.decorateRequest('idempotencyClaim', null)
  app.decorateRequest('writeDb', async function (this: FastifyRequest): Promise<Db> {
    const claim = this.idempotencyClaim
    if (claim === null || !claim.transactional) return app.db
    claim.trx ??= app.db.startTransaction().execute()
    return claim.trx
  })
  app.decorateRequest('afterCommit', function (this: FastifyRequest, fn: () => void) {
    // Outside the key's transaction a write commits as it runs: what waits on it runs now.
    const claim = this.idempotencyClaim
    if (claim === null || !claim.transactional) fn()
    else claim.committed.push(fn)
  })

  /** Undoes the request's writes and gives the key back, so that a retry runs again. */
  const abandon = async (claim: Claim): Promise<void> => {
    await claim.trx?.then(async (trx) => { await trx.rollback().execute() }).catch(() => {})
    await releaseKey(app.db, claim.scope, claim.key)
  }

  // One per route: its body schema says which fields are secrets.
  const checking = (secrets: ReadonlySet<string>): preHandlerAsyncHookHandler => async (request, reply) => {
    const key = request.headers[HEADER]
    if (key === undefined) return
    if (typeof key !== 'string' || key.length === 0 || key.length > 255) {
      throw badRequest('Idempotency-Key must be 1 to 255 characters', FIELD)
    }
    const scope = request.user === undefined || request.user === null ? addressScope(normalizeIP(request.ip)) : userScope(request.user.sub)
    const claim = await claimKey(app.db, scope, key, fingerprint(fingerprintKey, request, secrets))
    switch (claim.outcome) {
      case 'claimed':
        // The transaction opens when the handler asks for it (`request.writeDb`): what the handler
        // does before (a prepare hook recording a failed guess) commits on its own and stays.
        request.idempotencyClaim = { scope, key, transactional: request.routeOptions.config.transaction === true, trx: undefined, committed: [] }
        return
      case 'mismatch':
        throw unprocessable('Idempotency-Key was already used for another request', FIELD)
      case 'in-progress':
        throw conflict('a request with this Idempotency-Key is still in progress; retry later', FIELD)
      case 'replay':
        return reply.code(claim.response.statusCode).headers({ ...claim.response.headers, 'idempotent-replayed': 'true' }).send(claim.response.body)
    }
  }

  // The response is recorded in the request's transaction (routes with `config.transaction`): a
  // crash before the commit loses the write and the record together, and a retry runs again.
  const record: onSendAsyncHookHandler<unknown> = async (request, reply, payload) => {
    const claim = request.idempotencyClaim
    if (claim === null) return payload
    request.idempotencyClaim = null
    if (reply.statusCode < 200 || reply.statusCode >= 300 || (typeof payload !== 'string' && payload !== null && payload !== undefined)) {
      await abandon(claim)
      return payload
    }
    const headers: Record<string, string> = {}
    for (const name of REPLAYED_HEADERS) {
      const value = reply.getHeader(name)
      if (typeof value === 'string') headers[name] = value
    }
    try {
      const trx = await claim.trx
      await completeKey(trx ?? app.db, claim.scope, claim.key, { statusCode: reply.statusCode, headers, body: payload ?? '' })
      await trx?.commit().execute()
    } catch (error) {
      await abandon(claim)
      throw error
    }
    for (const fn of claim.committed) fn()
    return payload
  }

  // A request that ends without an answer being sent (the client went away) is undone.
  const cleanUp: onResponseAsyncHookHandler = async (request) => {
    const claim = request.idempotencyClaim
    if (claim === null) return
    request.idempotencyClaim = null
    await abandon(claim)
  }

  app.addHook('onRoute', (route) => {
    const post = route.method === 'POST' || (Array.isArray(route.method) && route.method.includes('POST'))
    if (!post && route.config?.idempotencyKey !== true) return
    if (route.config?.replayable === false) return
    route.preHandler = [...[route.preHandler ?? []].flat(), checking(writeOnlyFields(route.schema?.body))]
    route.onSend = [...[route.onSend ?? []].flat(), record]
    route.onResponse = [...[route.onResponse ?? []].flat(), cleanUp]
  })
}

export default fp(idempotency, { name: 'tandem-idempotency', fastify: '5.x' })
