import { randomUUID } from 'node:crypto'
import cors from '@fastify/cors'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import fp from 'fastify-plugin'
import helmet from 'helmet'
import type { TandemOptions } from '../schema/options.js'
import { useConfig } from './config.js'

export const REQUEST_ID_HEADER = 'x-request-id'
export const MAX_REQUEST_ID_LENGTH = 200
// Visible ASCII only: no CR/LF (header and log injection), no spaces, no control characters.
const SAFE_REQUEST_ID = new RegExp(`^[\\x21-\\x7e]{1,${MAX_REQUEST_ID_LENGTH}}$`)

/** The caller's `x-request-id` when it is safe to log and echo, else undefined. */
export function acceptedRequestId (value: unknown): string | undefined {
  return typeof value === 'string' && SAFE_REQUEST_ID.test(value) ? value : undefined
}

/**
 * Fastify's `genReqId`: the caller's `x-request-id` when safe, else a fresh UUID. Used instead of
 * `requestIdHeader`, which would take any header value as it comes.
 */
export function requestIdOf (request: { headers: Record<string, unknown> }): string {
  return acceptedRequestId(request.headers[REQUEST_ID_HEADER]) ?? randomUUID()
}

/** JSON answers need no scripts, styles or frames; the HTML pages (`/docs`, `/graphiql`) set policies of their own. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'"

const corsHeaders = {
  methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
  allowedHeaders: ['authorization', 'content-type', 'accept', 'if-match', 'if-none-match', 'idempotency-key', REQUEST_ID_HEADER],
  exposedHeaders: ['etag', 'link', 'location', 'retry-after', 'ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', REQUEST_ID_HEADER],
  maxAge: 600
}

/** `*` → any origin; `https://a.io, https://b.io` → those. */
export function parseCorsOrigins (value: string): '*' | string[] {
  const trimmed = value.trim()
  return trimmed === '*' ? '*' : trimmed.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
}

/** What helmet does to every response under one configuration: the headers it sets, those it removes. */
export interface HelmetPolicy {
  headers: Readonly<Record<string, string>>
  removed: readonly string[]
}

/**
 * helmet's middleware run once, on a response that records what it is told. Without a CSP none of
 * its headers depends on the request, so each answer gets them through the reply's own headers:
 * calling the middleware per request set each one on the raw response, which also made Node.js take
 * its slower path for every header Fastify writes after it (PERFORMANCE-DECISIONS.md, 'helmet's
 * headers read once, sent with the reply's own'). A middleware that would not finish at once is refused here, not served.
 */
export function helmetPolicy (options: Parameters<typeof helmet>[0]): HelmetPolicy {
  const headers: Record<string, string> = {}
  const removed: string[] = []
  const recorder = {
    setHeader (name: string, value: unknown) { headers[name.toLowerCase()] = String(value) },
    removeHeader (name: string) {
      delete headers[name.toLowerCase()]
      removed.push(name.toLowerCase())
    }
  }
  let finished = false
  const middleware = helmet(options) as unknown as (req: object, res: typeof recorder, next: (error?: unknown) => void) => void
  middleware({ headers: {} }, recorder, (error) => {
    if (error !== undefined && error !== null) throw error
    finished = true
  })
  if (!finished) throw new Error('helmet did not finish at once: its headers would depend on the request')
  return { headers, removed }
}

async function security (app: FastifyInstance, options: TandemOptions): Promise<void> {
  const config = useConfig(app, options)
  // A host that registered @fastify/helmet itself keeps its own policy.
  const ownHeaders = !app.hasReplyDecorator('helmet')
  if (ownHeaders) {
    // helmet's headers without its CSP, which would not fit the docs page and GraphiQL (their HTML
    // carries a policy of its own); a strict one is set on every non-HTML answer below.
    const policy = helmetPolicy({ contentSecurityPolicy: false })
    app.addHook('onRequest', (_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
      reply.headers(policy.headers)
      for (const name of policy.removed) reply.removeHeader(name)
      done()
    })
  }
  if (config.corsOrigins !== undefined) {
    // Tokens travel in `Authorization`, never in cookies: no credentials.
    await app.register(cors, { origin: parseCorsOrigins(config.corsOrigins), credentials: false, ...corsHeaders })
  }
  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: null, payload: unknown) => void) => {
    if (ownHeaders) {
      const type = reply.getHeader('content-type')
      if (typeof type !== 'string' || !type.startsWith('text/html')) reply.header('content-security-policy', API_CSP)
    }
    // A host with its own `genReqId` may hand out anything: only a safe id is echoed.
    const id = acceptedRequestId(request.id)
    if (id !== undefined) reply.header(REQUEST_ID_HEADER, id)
    done(null, payload)
  })
}

/**
 * HTTP hardening for the whole application: helmet's headers (with a strict CSP on API
 * answers; the HTML of `/docs` and `/graphiql` sets its own), CORS for `corsOrigins` when set (no CORS
 * headers otherwise), and the request id echoed as `x-request-id` on every answer. Pair it with
 * `serverOptions()` (or `genReqId: requestIdOf`) so that a caller's id is accepted only when safe.
 * @example
 * await app.register(security, { corsOrigins: 'https://app.example.com' })
 */
export default fp(security, { name: 'tandem-security', fastify: '5.x' })
