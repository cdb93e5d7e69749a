// A declared resource listed under its owner's path (`GET /users/{id}/posts`, `/users/{id}/orders`):
// the served resource's list of one owner's rows, with every list parameter and `include=` of the
// resource, as its own list has them.
import type { FastifyInstance, RouteShorthandOptions } from 'fastify'
import type { TObject } from '@sinclair/typebox'
import { parseInclude } from '../db/relations.js'
import { relationData } from '../db/resource.js'
import { servedResourceOf } from '../rules/served-resources.js'
import { IdParams, ListOf, errors } from '../schema/common.js'
import { servedRelations } from '../schema/relation-targets.js'
import type { Resource } from '../schema/resource.js'
import { sendList } from './reply.js'
import { embedding, selectionWith, withIncludable } from './related.js'

type Query = Record<string, unknown> & { fields?: string, include?: string }

export interface OwnerList {
  resource: Resource
  /** Every resource served beside it (their inverses on it are included too). */
  resources: readonly Resource[]
  /** The owner's resource's plural: `users` for `/users/{id}/posts`. */
  ownerPlural: string
  /** Who may list: the route's `config.auth`. The served resource's rules apply besides. */
  auth: NonNullable<RouteShorthandOptions['config']>['auth']
  summary: string
}

/**
 * `GET /{owner plural}/{id}/{plural}`: the rows of one owner (404 naming the owner's resource when there
 * is none), its cursors those of the resource's list filtered on that owner. The path names the owner:
 * a filter on the owner column is not a parameter here.
 */
export function ownerListRoute (app: FastifyInstance, options: OwnerList): void {
  const { resource } = options
  const model = servedResourceOf(app, resource, options.resources)
  const relations = servedRelations(resource, options.resources).filter((relation) => relation.include !== false).map(relationData)
  const names = relations.map(({ relation }) => relation.name)
  const ownerFilters = resource.filters.filter(({ field }) => field === resource.declaration.owner).map(({ name }) => name)
  const listQuery = resource.schemas.listQuery as TObject
  const properties = Object.fromEntries(Object.entries(listQuery.properties).filter(([name]) => !ownerFilters.includes(name)))
  const querystring = withIncludable({ ...listQuery, properties }, [], relations)
  const codes = options.auth === 'selfOrAdmin' ? [400, 401, 403, 404, 429] : [400, 401, 404, 429]

  app.get(`/${options.ownerPlural}/:id/${resource.plural}`, {
    config: { auth: options.auth },
    schema: { tags: [resource.plural], summary: options.summary, params: IdParams, querystring, response: { 200: ListOf(selectionWith(resource.schemas.item, relations)), ...errors(...codes) } }
  }, async (request, reply) => {
    const query = request.query as Query
    const wanted = parseInclude(names, query.include)
    const shape = await embedding(app, request, relations.filter(({ relation }) => wanted.has(relation.name)), query.fields, false)
    const page = await model.list(request.user, { ...query, fields: shape.fields }, { owner: (request.params as { id: number }).id })
    await shape.embed(page.data)
    return sendList(request, reply, page)
  })
}
