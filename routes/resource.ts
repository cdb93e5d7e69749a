import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify'
import type { TObject } from '@sinclair/typebox'
import { parseInclude } from '../db/relations.js'
import { OWNER_FILTER, PARENT_FILTER, relationData, resourceData, rowExists } from '../db/resource.js'
import type { AuthRule } from '../plugins/auth.js'
import { requireAuth } from '../plugins/auth.js'
import { narrowFilters, shownRow, shownRows } from '../rules/field-rules.js'
import { announce, callerNeeded, forbidsOthersRows, readableOwner, readRefused, replacedValues } from '../rules/resource.js'
import { resourceWrites } from '../rules/resource-writes.js'
import { IdParams, ItemQuery, ListOf, NoContent, NotModified, WriteQuery, errors } from '../schema/common.js'
import { badRequest, notFound } from '../schema/errors.js'
import { parentOf, pluralOf, servedRelations } from '../schema/relation-targets.js'
import type { AccessRule, Resource } from '../schema/resource.js'
import { etagOf, ifMatch, sendEntity } from './conditional.js'
import { found, sendList } from './reply.js'
import { embedding, relatedListRoute, selectionWith, withIncludable, withOwnerColumn } from './related.js'

/** No body, or an empty object: what an action without `input` takes. */
const isEmptyBody = (body: unknown): boolean =>
  body === undefined || (typeof body === 'object' && body !== null && !Array.isArray(body) && Object.keys(body).length === 0)

type Query = Record<string, unknown> & { fields?: string, include?: string }
type Params = { id: number }

/** The route's `config.auth` for a rule: who must be signed in (owner rules then look at the row). */
function routeAuth (rule: AccessRule): AuthRule | undefined {
  const needed = callerNeeded(rule)
  return needed === 'nobody' ? undefined : needed === 'admin' ? 'admin' : 'authenticated'
}

/**
 * The REST routes of a declared resource: `GET/POST /{plural}`, `GET/PUT/PATCH/DELETE /{plural}/{id}`,
 * and `GET /{plural}/{id}/{relation}` for its list relations (those other declarations add to it
 * through `inverse` too). A write whose rule is `false` has no route (the router's 404). A singular
 * resource has `GET/PUT/PATCH /{parent plural}/{id}/{name}` only (its create and delete are `false`).
 * `resources` are every declared resource, where its relations' targets (and parent) are found.
 */
export function declaredRoutes (resource: Resource, resources: readonly Resource[] = [resource]): FastifyPluginAsync {
  const data = resourceData(resource)
  const writes = resourceWrites(resource, data, resources)
  const served = servedRelations(resource, resources).map(relationData)
  // What `include=` offers: relations declared `include: false` are GraphQL fields only.
  const relations = served.filter(({ relation }) => relation.include !== false)
  const relationNames = relations.map(({ relation }) => relation.name)
  const { plural, auth } = resource
  // A singular resource is served under its parent, whose name a 404 gives, and is never listed.
  const parent = parentOf(resource, resources)
  const singular = parent !== undefined
  const itemPath = singular ? `/${parent.plural}/:id/${resource.name}` : `/${plural}/:id`
  const missing = parent?.name ?? resource.name
  const one = singular ? `the ${resource.name} of a ${parent.name}` : `a ${resource.name}`
  const selection = selectionWith(resource.schemas.item, relations, resource.key)
  // `include` names what may be included, in OpenAPI.
  const schemas = {
    ...resource.schemas,
    selection,
    list: ListOf(selection),
    listQuery: withIncludable(resource.schemas.listQuery as TObject, [], relations),
    itemQuery: withIncludable(ItemQuery, [], relations)
  }
  // A resource that lives under a parent is listed and created at `/{parent plural}/{id}/{plural}`.
  const under = resource.under === undefined ? undefined : served.find(({ relation }) => relation.name === resource.under?.relation)?.relation
  const underPath = under === undefined ? undefined : `/${pluralOf(under.target)}/:id/${plural}`
  const tags = [plural]
  const filterNames = [...resource.filters.map(({ name }) => name), ...(resource.declaration.search ?? []).length > 0 ? ['q'] : []]
  const withAuth = (rule: AccessRule, transaction = false): NonNullable<RouteShorthandOptions['config']> => {
    const config: Record<string, unknown> = {}
    const authRule = routeAuth(rule)
    if (authRule !== undefined) config.auth = authRule
    if (transaction) config.transaction = true
    return config
  }
  // Creates counted against the attempt limits (plugins/rate-limit.ts counts a route that says so).
  const { createLimit } = resource.declaration
  const createConfig = (rule: AccessRule): RouteShorthandOptions['config'] => createLimit === undefined
    ? withAuth(rule, true)
    : { ...withAuth(rule, true), attemptLimit: { kind: createLimit.kind, account: (request: FastifyRequest) => createLimit.account(request.body as Record<string, unknown>) } }
  const caller = (request: FastifyRequest) => auth.read === 'public' ? undefined : request.user
  const rules = resource.fieldRules
  const search = resource.declaration.search ?? []

  return async (app: FastifyInstance) => {
    requireAuth(app)
    const secret = () => app.tandemConfig.jwtSecret
    const written = (reply: FastifyReply, row: object) => reply.header('etag', etagOf(row)).send(row)
    // `If-Match` names the representation the caller was shown (their field rules applied).
    const shownMatch = (request: FastifyRequest) => {
      const matches = ifMatch(request)
      return matches === undefined ? undefined : (current: Record<string, unknown>) => { matches(shownRow(rules, request.user, current)) }
    }
    // What a change answers: the row as the caller may see it.
    const changed = (request: FastifyRequest, reply: FastifyReply, row: Record<string, unknown>) => written(reply, shownRow(rules, request.user, row))
    // The caller the field rules look at: a public resource's route asks for no token, so one is checked only when sent.
    const reader = async (request: FastifyRequest) => auth.read !== 'public'
      ? request.user
      : rules !== undefined && request.headers.authorization !== undefined ? await app.accessTokens.authenticate(request) : undefined

    /** What `include=` asks: see `embedding`. */
    const includes = async (request: FastifyRequest, query: Query) => {
      const wanted = parseInclude(relationNames, query.include)
      return embedding(app, request, relations.filter(({ relation }) => wanted.has(relation.name)), query.fields, auth.read === 'public')
    }

    for (const related of served.filter(({ relation }) => relation.list && relation.route !== false)) {
      relatedListRoute(app, {
        plural,
        parentName: resource.name,
        tags,
        config: withAuth(auth.read),
        publicParent: auth.read === 'public',
        related,
        parent: async (request, id) => { found(await data.find(app.db, id, 'id', readableOwner(resource, caller(request))), resource.name) }
      })
    }

    /** A page of the list as `query` asks, narrowed to one parent's rows when `parentId` is given. */
    const listed = async (request: FastifyRequest, reply: FastifyReply, parentId?: number) => {
      const query = request.query as Query
      const shape = await includes(request, query)
      const viewer = await reader(request)
      const filters: Record<string, unknown> = Object.fromEntries(filterNames.map((name) => [name, query[name]]))
      const owner = readableOwner(resource, caller(request))
      if (owner !== undefined) filters[OWNER_FILTER] = owner
      if (parentId !== undefined) filters[PARENT_FILTER] = parentId
      narrowFilters(rules, viewer, filters, resource.filters, search)
      const read = withOwnerColumn(rules, shape.fields, resource.key)
      const page = await data.page(app.db, { ...query, fields: read.fields }, { secret: secret(), filters })
      // Only an empty page needs to ask whether the parent exists at all.
      if (under !== undefined && parentId !== undefined && page.data.length === 0 && !await rowExists(app.db, under.target.table, parentId)) throw notFound(under.target.name)
      await shape.embed(page.data)
      const shown = shownRows(rules, viewer, page.data)
      read.strip(shown)
      return sendList(request, reply, { ...page, data: shown })
    }

    if (!singular) {
      app.get(`/${plural}`, {
        config: withAuth(auth.read),
        schema: { tags, summary: `List ${plural}`, querystring: schemas.listQuery, response: { 200: schemas.list, ...errors(400, 401, 403, 429) } }
      }, async (request, reply) => listed(request, reply))
    }

    if (under !== undefined && underPath !== undefined) {
      // The parent is the path's: a filter on its key is not a parameter here.
      const keyFilters = resource.filters.filter(({ field }) => field === under.key).map(({ name }) => name)
      const properties = Object.fromEntries(Object.entries(schemas.listQuery.properties).filter(([name]) => !keyFilters.includes(name)))
      app.get(underPath, {
        config: withAuth(auth.read),
        schema: { tags, summary: `List the ${plural} of a ${under.target.name}`, params: IdParams, querystring: { ...schemas.listQuery, properties }, response: { 200: schemas.list, ...errors(400, 401, 403, 404, 429) } }
      }, async (request, reply) => listed(request, reply, (request.params as Params).id))
    }

    app.get(itemPath, {
      config: withAuth(auth.read),
      schema: { tags, summary: `Get ${one}`, params: IdParams, querystring: schemas.itemQuery, response: { 200: schemas.selection, 304: NotModified, ...errors(400, 401, 403, 404, 429) } }
    }, async (request, reply) => {
      const query = request.query as Query
      const shape = await includes(request, query)
      const id = (request.params as Params).id
      const viewer = await reader(request)
      const owner = readableOwner(resource, caller(request))
      const read = withOwnerColumn(rules, shape.fields, resource.key)
      const mine = await data.find(app.db, id, read.fields, owner)
      // Only a miss under an owner rule that forbids others' rows asks whether the row is someone else's.
      if (mine === undefined && owner !== undefined && forbidsOthersRows(resource) && await data.find(app.db, id, resource.key) !== undefined) throw readRefused(resource)
      const row = found(mine, missing)
      await shape.embed([row])
      const shown = shownRow(rules, viewer, row)
      read.strip([shown])
      return sendEntity(request, reply, shown)
    })

    if (auth.create !== false) {
      const rule = auth.create
      // Under a parent, the create is only there: `POST /posts/{id}/comments` (404 naming the parent).
      app.post(underPath ?? `/${plural}`, {
        config: createConfig(rule),
        schema: { tags, summary: resource.declaration.create?.summary ?? (under === undefined ? `Create a ${resource.name}` : `Create a ${resource.name} of a ${under.target.name}`), ...under === undefined ? {} : { params: IdParams }, querystring: WriteQuery, body: schemas.create, response: { 201: schemas.item, ...errors(400, 401, 403, ...under === undefined ? [] : [404], 409, 413, 415, 422, 429) } }
      }, async (request, reply) => {
        const parent = under === undefined ? undefined : (request.params as Params).id
        const row = await writes.create(async () => await request.writeDb(), rule === 'public' ? undefined : request.user, request.body as Record<string, unknown>, { app, afterCommit: (fn) => { request.afterCommit(fn) } }, parent)
        request.afterCommit(() => { announce(app, resource, 'created', row) })
        // Answered whole, field rules or not: its caller wrote it.
        // The new row's own path: `/api/v1/comments/7` for `POST /api/v1/posts/1/comments`.
        const path = (request.url.split('?')[0] ?? '').replace(/\/$/, '')
        const collection = under === undefined ? path : `${path.split('/').slice(0, -3).join('/')}/${plural}`
        return written(reply.code(201).header('location', `${collection}/${row.id}`), row)
      })
    }

    if (auth.update !== false) {
      const rule = auth.update
      app.put(itemPath, {
        config: withAuth(rule),
        schema: { tags, summary: `Replace ${one}`, params: IdParams, querystring: WriteQuery, body: schemas.replace, response: { 200: schemas.item, ...errors(400, 401, 403, 404, 409, 412, 413, 415, 422, 429) } }
      }, async (request, reply) => {
        const values = replacedValues(resource, request.body as Record<string, unknown>)
        const row = found(await writes.update(app.db, (request.params as Params).id, request.user, values, shownMatch(request), { app }), missing)
        announce(app, resource, 'updated', row)
        return changed(request, reply, row)
      })

      app.patch(itemPath, {
        config: withAuth(rule),
        schema: { tags, summary: `Change some fields of ${one}`, params: IdParams, querystring: WriteQuery, body: schemas.patch, response: { 200: schemas.item, ...errors(400, 401, 403, 404, 409, 412, 413, 415, 422, 429) } }
      }, async (request, reply) => {
        const values = request.body as Record<string, unknown>
        const row = found(await writes.update(app.db, (request.params as Params).id, request.user, values, shownMatch(request), { app }), missing)
        announce(app, resource, 'updated', row)
        return changed(request, reply, row)
      })
    }

    for (const [name, action] of Object.entries(resource.declaration.actions ?? {})) {
      app.post(`${itemPath}/${name}`, {
        config: withAuth(action.auth, true),
        schema: {
          tags,
          summary: action.summary ?? `${name} ${one}`,
          params: IdParams,
          querystring: WriteQuery,
          // Closed like every other body of the API unless the host opened it; no body at all when there is no input.
          ...action.input === undefined ? {} : { body: { ...action.input, additionalProperties: action.input.additionalProperties ?? false } },
          response: { 200: schemas.item, ...errors(400, 401, 403, 404, 409, 412, 413, 415, 422, 429) }
        }
      }, async (request, reply) => {
        if (action.input === undefined && !isEmptyBody(request.body)) throw badRequest(`${name} takes no body`, 'body')
        const input = (request.body ?? {}) as Record<string, unknown>
        const row = found(await writes.act(await request.writeDb(), name, (request.params as Params).id, request.user, action.input === undefined ? {} : input, shownMatch(request), { app, afterCommit: (fn) => { request.afterCommit(fn) } }), missing)
        request.afterCommit(() => { announce(app, resource, 'updated', row) })
        return changed(request, reply, row)
      })
    }

    if (auth.delete !== false) {
      app.delete(`/${plural}/:id`, {
        config: withAuth(auth.delete),
        schema: { tags, summary: `Delete a ${resource.name}`, params: IdParams, querystring: WriteQuery, response: { 204: NoContent, ...errors(400, 401, 403, 404, 409, 412, 422, 429) } }
      }, async (request, reply) => {
        const row = await writes.remove(app.db, (request.params as Params).id, request.user, shownMatch(request), { app })
        if (row === undefined) throw notFound(resource.name)
        announce(app, resource, 'deleted', row)
        return reply.code(204).send(null)
      })
    }
  }
}
