// REST's link writes of a declared resource's manyToMany relations: `PUT` and `DELETE
// /{plural}/{id}/{relation}/{otherId}`, translated to the served resource's `link` and `unlink`.
import type { FastifyInstance, RouteShorthandOptions } from 'fastify'
import { Type } from '@sinclair/typebox'
import type { ServedResource } from '../rules/served-resource.js'
import { NoContent, WriteQuery, errors } from '../schema/common.js'
import { keySchema, type Key } from '../schema/keys.js'
import { linksOf } from '../schema/links.js'
import type { AccessRule, Resource } from '../schema/resource.js'

export interface LinkRoutes {
  resource: Resource
  resources: readonly Resource[]
  model: ServedResource
  tags: string[]
  /** A route's `config` for a rule (who must be signed in), in the request's transaction when asked. */
  withAuth: (rule: AccessRule, transaction?: boolean) => NonNullable<RouteShorthandOptions['config']>
}

/**
 * `PUT /{plural}/{id}/{relation}/{otherId}` makes the link (201, or 200 when it was there already:
 * idempotent), `DELETE` removes it (204, or 404 when there was none); both answer 404 when either row
 * is not one the caller may read. Each takes an `Idempotency-Key`, its write in the key's transaction.
 */
export function linkRoutes (app: FastifyInstance, { resource, resources, model, tags, withAuth }: LinkRoutes): void {
  for (const link of linksOf(resource, resources)) {
    const { relation, param } = link
    // Each id by the key type of the rows it names.
    const [idSchema, otherIdSchema] = [keySchema(resource.keyType), keySchema(relation.target.resource?.keyType ?? 'integer')]
    const params = Type.Object({ id: idSchema, [param]: otherIdSchema }, { additionalProperties: false })
    const body = Type.Object({ [relation.key]: idSchema, [relation.otherKey]: otherIdSchema }, { additionalProperties: false, description: `The link: a row of ${relation.through}.` })
    const path = `/${resource.plural}/:id/${relation.name}/:${param}`
    const target = relation.target.name
    const config = { ...withAuth(link.rule, true), idempotencyKey: true }
    const ids = (request: { params: unknown }) => {
      const given = request.params as Record<string, Key>
      return [given.id as Key, given[param] as Key] as const
    }
    app.put(path, {
      config,
      schema: {
        tags,
        summary: `Make a ${target} one of the ${relation.name} of a ${resource.name}`,
        description: `201 when the link is made, 200 when it was there already (nothing changed). 404 when the ${resource.name} or the ${target} is not one the caller may read.`,
        params,
        querystring: WriteQuery,
        response: { 200: body, 201: body, ...errors(400, 401, 403, 404, 409, 422, 429) }
      }
    }, async (request, reply) => {
      const [id, otherId] = ids(request)
      const done = await model.link(request.user, relation.name, id, otherId, { db: async () => await request.writeDb(), afterCommit: (fn) => { request.afterCommit(fn) } })
      return reply.code(done.changed ? 201 : 200).send(done.link)
    })
    app.delete(path, {
      config,
      schema: {
        tags,
        summary: `Remove a ${target} from the ${relation.name} of a ${resource.name}`,
        description: `404 when there is no such link, or the ${resource.name} or the ${target} is not one the caller may read.`,
        params,
        querystring: WriteQuery,
        response: { 204: NoContent, ...errors(400, 401, 403, 404, 409, 422, 429) }
      }
    }, async (request, reply) => {
      const [id, otherId] = ids(request)
      await model.unlink(request.user, relation.name, id, otherId, { db: async () => await request.writeDb(), afterCommit: (fn) => { request.afterCommit(fn) } })
      return reply.code(204).send(null)
    })
  }
}
