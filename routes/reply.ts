import type { FastifyReply, FastifyRequest } from 'fastify'
import { nextLink, type ListPage } from '../db/pagination.js'
import { notFound } from '../schema/errors.js'

/** Sends a list page with its `Link: rel="next"` header. */
export function sendList (request: FastifyRequest, reply: FastifyReply, page: ListPage): ListPage {
  const link = nextLink(request.url, page)
  if (link !== undefined) reply.header('link', link)
  return page
}

/** The row, or a 404 naming what was not found. */
export function found<T> (row: T | undefined, what: string): T {
  if (row === undefined) throw notFound(what)
  return row
}
