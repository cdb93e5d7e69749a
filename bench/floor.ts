// What the framework alone costs: Fastify, the same `pg` pool and prepared keyset query as the
// baseline, a response schema (fast-json-stringify), on `/auth/users` an HS256 token checked by
// @fastify/jwt as the API checks it, and on `/limited/users` @fastify/rate-limit counting per caller
// as well. No signed cursors, security headers, versioning, logger or database layer.
// Started by bench/run.ts as a process of its own:
//   DATABASE_URL=postgres://… JWT_SECRET=… PORT=3002 node --import tsx bench/floor.ts
import jwt from '@fastify/jwt'
import rateLimit from '@fastify/rate-limit'
import Fastify from 'fastify'
import { firstPage, referencePool } from './first-page.js'

const pool = referencePool()

const page = {
  200: {
    type: 'object',
    properties: {
      data: {
        type: 'array',
        items: {
          type: 'object',
          properties: { id: { type: 'integer' }, name: { type: 'string' }, email: { type: 'string' }, created_at: { type: 'string', format: 'date-time' } }
        }
      },
      pagination: {
        type: 'object',
        properties: { hasMore: { type: 'boolean' }, nextCursor: { type: ['string', 'null'] }, limit: { type: 'integer' } }
      }
    }
  }
}

const usersPage = async () => firstPage(pool, 'floor_users_page')

const app = Fastify({ logger: false })
await app.register(jwt, { secret: process.env.JWT_SECRET ?? 'floor-secret-floor-secret', verify: { algorithms: ['HS256'], allowedIss: 'tandem' } })
app.get('/health', async () => ({ status: 'ok' }))
app.get('/users', { schema: { response: page } }, usersPage)
app.get('/auth/users', { schema: { response: page }, onRequest: async (request) => { await request.jwtVerify() } }, usersPage)
// The same with @fastify/rate-limit as the contract asks for it (per caller, in memory, the IETF draft's headers).
await app.register(rateLimit, { global: false, enableDraftSpec: true, max: 1_000_000_000, timeWindow: 60_000 })
const perCaller = { max: 1_000_000_000, timeWindow: 60_000, keyGenerator: (request: { headers: Record<string, unknown> }) => String(request.headers.authorization) }
app.get('/limited/users', { schema: { response: page }, config: { rateLimit: perCaller }, onRequest: async (request) => { await request.jwtVerify() } }, usersPage)
await app.listen({ port: Number(process.env.PORT ?? 3002), host: process.env.HOST ?? '127.0.0.1' })

const close = () => { app.close().then(async () => pool.end()).catch(() => {}) }
process.once('SIGTERM', close)
process.once('SIGINT', close)
