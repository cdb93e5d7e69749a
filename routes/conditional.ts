import { createHash } from 'node:crypto'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { preconditionFailed } from '../schema/errors.js'

/**
 * A strong ETag of a representation. Computed from the row the handler returns (the same row the
 * serializer writes), so a write can check `If-Match` against the locked current row.
 */
export function etagOf (entity: object): string {
  const json = JSON.stringify(entity, (_key, value: unknown) => value instanceof Date ? value.toISOString() : value)
  return `"${createHash('sha256').update(json).digest('base64url').slice(0, 27)}"`
}

function listed (header: string, etag: string): boolean {
  return header.split(',').some((tag) => {
    const candidate = tag.trim()
    return candidate === '*' || candidate === etag
  })
}

/** Sets the ETag and answers 304 when the client's copy is current (`If-None-Match`). */
export function sendEntity<T extends object> (request: FastifyRequest, reply: FastifyReply, entity: T): T | FastifyReply {
  const etag = etagOf(entity)
  reply.header('etag', etag)
  const ifNoneMatch = request.headers['if-none-match']
  if (typeof ifNoneMatch === 'string' && listed(ifNoneMatch.replace(/W\//g, ''), etag)) {
    return reply.code(304).send()
  }
  return entity
}

/**
 * The `If-Match` check for a write, to run against the current row inside the write's
 * transaction (so nothing can change between the check and the write). Undefined when the
 * request has no `If-Match`.
 */
export function ifMatch (request: FastifyRequest): ((current: object) => void) | undefined {
  const header = request.headers['if-match']
  if (typeof header !== 'string') return undefined
  return (current) => {
    if (!listed(header, etagOf(current))) throw preconditionFailed()
  }
}
