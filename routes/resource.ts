import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify'
import { OWNER_FILTER, resourceData } from '../db/resource.js'
import type { AuthRule } from '../plugins/auth.js'
import { requireAuth } from '../plugins/auth.js'
import { announce, assertMayChange, callerNeeded, createdValues, readableOwner, replacedValues } from '../rules/resource.js'
import { IdParams, ItemQuery, NoContent, NotModified, WriteQuery, errors } from '../schema/common.js'
import { badRequest, notFound } from '../schema/errors.js'
import type { AccessRule, Resource } from '../schema/resource.js'
import { etagOf, ifMatch, sendEntity } from './conditional.js'
import { found, sendList } from './reply.js'

type Query = Record<string, unknown> & { fields?: string, include?: string }
type Params = { id: number }

/** The route's `config.auth` for a rule: who must be signed in (owner rules then look at the row). */
function routeAuth (rule: AccessRule): AuthRule | undefined {
  const needed = callerNeeded(rule)
  return needed === 'nobody' ? undefined : needed === 'admin' ? 'admin' : 'authenticated'
}

function noInclude (query: Query): void {
  if (query.include !== undefined && query.include !== '') throw badRequest('this resource has no relations to include', 'include')
}

/** The REST routes of a declared resource: `GET/POST /{plural}`, `GET/PUT/PATCH/DELETE /{plural}/{id}`. */
export function declaredRoutes (resource: Resource): FastifyPluginAsync {
  const data = resourceData(resource)
  const { schemas, plural, auth } = resource
  const tags = [plural]
  const filterNames = [...resource.declaration.filters ?? [], ...(resource.declaration.search ?? []).length > 0 ? ['q'] : []]
  const withAuth = (rule: AccessRule, transaction = false): RouteShorthandOptions['config'] => {
    const config: Record<string, unknown> = {}
    const authRule = routeAuth(rule)
    if (authRule !== undefined) config.auth = authRule
    if (transaction) config.transaction = true
    return config
  }
  const caller = (request: FastifyRequest) => auth.read === 'public' ? undefined : request.user

  return async (app: FastifyInstance) => {
    requireAuth(app)
    const secret = () => app.tandemConfig.jwtSecret
    const written = (reply: FastifyReply, row: object) => reply.header('etag', etagOf(row)).send(row)
    const check = (request: FastifyRequest, action: 'update' | 'delete') => {
      const matches = ifMatch(request)
      return (current: Record<string, unknown>) => {
        assertMayChange(resource, action, request.user, current)
        matches?.(current)
      }
    }

    app.get(`/${plural}`, {
      config: withAuth(auth.read),
      schema: { tags, summary: `List ${plural}`, querystring: schemas.listQuery, response: { 200: schemas.list, ...errors(400, 401, 403, 429) } }
    }, async (request, reply) => {
      const query = request.query as Query
      noInclude(query)
      const filters: Record<string, unknown> = Object.fromEntries(filterNames.map((name) => [name, query[name]]))
      const owner = readableOwner(resource, caller(request))
      if (owner !== undefined) filters[OWNER_FILTER] = owner
      return sendList(request, reply, await data.page(app.db, query, { secret: secret(), filters }))
    })

    app.get(`/${plural}/:id`, {
      config: withAuth(auth.read),
      schema: { tags, summary: `Get a ${resource.name}`, params: IdParams, querystring: ItemQuery, response: { 200: schemas.selection, 304: NotModified, ...errors(400, 401, 403, 404, 429) } }
    }, async (request, reply) => {
      const query = request.query as Query
      noInclude(query)
      const row = await data.find(app.db, (request.params as Params).id, query.fields, readableOwner(resource, caller(request)))
      return sendEntity(request, reply, found(row, resource.name))
    })

    app.post(`/${plural}`, {
      config: withAuth(auth.create, true),
      schema: { tags, summary: `Create a ${resource.name}`, querystring: WriteQuery, body: schemas.create, response: { 201: schemas.item, ...errors(400, 401, 403, 409, 413, 415, 422, 429) } }
    }, async (request, reply) => {
      const row = await data.create(request.db, createdValues(resource, auth.create === 'public' ? undefined : request.user, request.body as Record<string, unknown>))
      request.afterCommit(() => { announce(app, resource, 'created', row) })
      const collection = (request.url.split('?')[0] ?? '').replace(/\/$/, '')
      return written(reply.code(201).header('location', `${collection}/${row.id}`), row)
    })

    app.put(`/${plural}/:id`, {
      config: withAuth(auth.update),
      schema: { tags, summary: `Replace a ${resource.name}`, params: IdParams, querystring: WriteQuery, body: schemas.replace, response: { 200: schemas.item, ...errors(400, 401, 403, 404, 409, 412, 413, 415, 422, 429) } }
    }, async (request, reply) => {
      const values = replacedValues(resource, request.body as Record<string, unknown>)
      const row = found(await data.update(app.db, (request.params as Params).id, values, check(request, 'update')), resource.name)
      announce(app, resource, 'updated', row)
      return written(reply, row)
    })

    app.patch(`/${plural}/:id`, {
      config: withAuth(auth.update),
      schema: { tags, summary: `Change some fields of a ${resource.name}`, params: IdParams, querystring: WriteQuery, body: schemas.patch, response: { 200: schemas.item, ...errors(400, 401, 403, 404, 409, 412, 413, 415, 422, 429) } }
    }, async (request, reply) => {
      const values = request.body as Record<string, unknown>
      const row = found(await data.update(app.db, (request.params as Params).id, values, check(request, 'update')), resource.name)
      announce(app, resource, 'updated', row)
      return written(reply, row)
    })

    app.delete(`/${plural}/:id`, {
      config: withAuth(auth.delete),
      schema: { tags, summary: `Delete a ${resource.name}`, params: IdParams, querystring: WriteQuery, response: { 204: NoContent, ...errors(400, 401, 403, 404, 412, 429) } }
    }, async (request, reply) => {
      const row = await data.remove(app.db, (request.params as Params).id, check(request, 'delete'))
      if (row === undefined) throw notFound(resource.name)
      announce(app, resource, 'deleted', row)
      return reply.code(204).send(null)
    })
  }
}
