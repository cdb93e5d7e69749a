import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, FastifySchemaCompiler, RouteShorthandOptions } from 'fastify'
import { createOwnerWords, resolveOwners, whoMay } from '../schema/owners.js'
import type { TObject } from '@sinclair/typebox'
import { parseInclude } from '../db/relations.js'
import { relationData, type RelationData } from '../db/resource.js'
import type { AccessUser, AuthRule } from '../plugins/auth.js'
import { requireAuth } from '../plugins/auth.js'
import { callerNeeded } from '../rules/resource.js'
import { servedResourceOf } from '../rules/served-resources.js'
import { ItemQuery, ListOf, NoContent, NotModified, WriteQuery, errors } from '../schema/common.js'
import { validatorCompiler } from '../plugins/ajv.js'
import { badRequest, notFound } from '../schema/errors.js'
import { Type } from '@sinclair/typebox'
import { keyParams, keySchema, type Key } from '../schema/keys.js'
import { parentOf, pluralOf, servedRelations } from '../schema/relation-targets.js'
import type { AccessRule, Resource } from '../schema/resource.js'
import { etagOf, ifMatch, sendEntity } from './conditional.js'
import { linkRoutes } from './links.js'
import { found, sendList } from './reply.js'
import { embedding, readsAsOf, selectionWith, withIncludable } from './related.js'

/** No body, or an empty object: what an action without `input` takes. */
const isEmptyBody = (body: unknown): boolean =>
  body === undefined || (typeof body === 'object' && body !== null && !Array.isArray(body) && Object.keys(body).length === 0)

type Query = Record<string, unknown> & { fields?: string, include?: string }
type Params = { id: Key }

/** The route's `config.auth` for a rule: who must be signed in (owner rules then look at the row). */
function routeAuth (rule: AccessRule): AuthRule | undefined {
  const needed = callerNeeded(rule)
  return needed === 'nobody' ? undefined : needed === 'admin' ? 'admin' : 'authenticated'
}

/** What REST's lists and rows of `resource` offer: the relations `include=` embeds, and the schemas that name them. */
function restShape (resource: Resource, resources: readonly Resource[]) {
  // What `include=` offers: relations declared `include: false` are GraphQL fields only.
  const relations = servedRelations(resource, resources).map(relationData).filter(({ relation }) => relation.include !== false)
  const selection = selectionWith(resource.schemas.item, relations, resource.key)
  return {
    relations,
    selection,
    list: ListOf(selection),
    // `include` names what may be included, in OpenAPI.
    listQuery: withIncludable(resource.schemas.listQuery as TObject, [], relations),
    itemQuery: withIncludable(ItemQuery, [], relations)
  }
}

/** What `include=` of `query` asks among `relations`: see `embedding`. Unknown names are a 400. */
async function includesOf (app: FastifyInstance, request: FastifyRequest, relations: readonly RelationData[], query: Query, publicRoute: boolean) {
  const wanted = parseInclude(relations.map(({ relation }) => relation.name), query.include)
  return embedding(app, request, relations.filter(({ relation }) => wanted.has(relation.name)), query.fields, publicRoute)
}

/** A list's query string without the filters on `key`: the row the rows are listed under is the path's. */
function withoutFiltersOn (resource: Resource, listQuery: TObject, key: string | undefined): TObject {
  const keyFilters = resource.filters.filter(({ field }) => field === key).map(({ name }) => name)
  return { ...listQuery, properties: Object.fromEntries(Object.entries(listQuery.properties).filter(([name]) => !keyFilters.includes(name))) }
}

/**
 * The REST routes of a declared resource: `GET/POST /{plural}`, `GET/PUT/PATCH/DELETE /{plural}/{id}`,
 * and `GET /{plural}/{id}/{relation}` for its list relations (those other declarations add to it
 * through `inverse` too). A write whose rule is `false` has no route (the router's 404). A singular
 * resource has `GET/PUT/PATCH /{parent plural}/{id}/{name}` only (its create and delete are `false`).
 * `resources` are every declared resource, where its relations' targets (and parent) are found.
 */
export function declaredRoutes (resource: Resource, resources: readonly Resource[] = [resource]): FastifyPluginAsync {
  // Who owns each resource's rows, through their relations' targets: resolved before any statement is built.
  resolveOwners(resources)
  const served = servedRelations(resource, resources).map(relationData)
  const shape = restShape(resource, resources)
  const { plural, auth } = resource
  // A singular resource is served under its parent, whose name a 404 gives, and is never listed.
  const parent = parentOf(resource, resources)
  const singular = parent !== undefined
  const itemPath = singular ? `/${parent.plural}/:id/${resource.name}` : `/${plural}/:id`
  const missing = parent?.name ?? resource.name
  const one = singular ? `the ${resource.name} of a ${parent.name}` : `a ${resource.name}`
  const schemas = { ...resource.schemas, ...shape }
  // A resource that lives under a parent is listed and created at `/{parent plural}/{id}/{plural}`.
  const under = resource.under === undefined ? undefined : served.find(({ relation }) => relation.name === resource.under?.relation)?.relation
  const underPath = under === undefined ? undefined : `/${pluralOf(under.target)}/:id/${plural}`
  const tags = [plural]
  // `{id}` as each path's row is named: this resource's key, or its parent's (a built-in's: an integer).
  const IdParams = keyParams(resource.keyType)
  const paramsOf = (target: { resource?: Resource }) => keyParams(target.resource?.keyType ?? 'integer')
  // A change or deletion by filter answers the keys of the rows, of the key's type.
  const BulkAnswer = Type.Object({
    count: Type.Integer({ minimum: 0, description: 'How many rows were changed (or deleted).' }),
    ids: Type.Array(keySchema(resource.keyType), { description: 'Their ids, in ascending order.' })
  }, { additionalProperties: false })
  const withAuth = (rule: AccessRule, transaction = false): NonNullable<RouteShorthandOptions['config']> => {
    const config: Record<string, unknown> = {}
    const authRule = routeAuth(rule)
    if (authRule !== undefined) config.auth = authRule
    if (transaction) config.transaction = true
    return config
  }
  // Creates counted against the attempt limits (plugins/rate-limit.ts counts a route that says so).
  const { createLimit } = resource
  const createConfig = (rule: AccessRule): RouteShorthandOptions['config'] => createLimit === undefined
    ? withAuth(rule, true)
    : { ...withAuth(rule, true), attemptLimit: { kind: createLimit.kind, account: (request: FastifyRequest) => Array.isArray(request.body) ? request.body.map((item) => createLimit.account(item as Record<string, unknown>)) : createLimit.account(request.body as Record<string, unknown>) } }
  // Routes without an auth rule leave `request.user` unset.
  const userOf = (request: FastifyRequest): AccessUser | undefined => (request as { user?: AccessUser | null }).user ?? undefined

  // An array POST creates many (CONTRACT §14): its answer, and the filters of a change or deletion by filter.
  const batch = Type.Object({ data: Type.Array(resource.schemas.item) })
  const whereQuery = Type.Object({
    ...Object.fromEntries(resource.filters.map(({ name }) => [name, (schemas.listQuery as TObject).properties[name]])),
    ...WriteQuery.properties
  }, { additionalProperties: false })

  return async (app: FastifyInstance) => {
    requireAuth(app)
    const model = servedResourceOf(app, resource, resources)
    const written = (reply: FastifyReply, row: object) => reply.header('etag', etagOf(row)).send(row)
    // Who reads `listed`'s rows: a public resource's route asks for no token, so one is checked only
    // when sent and the field rules look at it (as `readerOf` decides for GraphQL).
    const readerOfList = async (request: FastifyRequest, listed: Resource) => listed.auth.read !== 'public'
      ? userOf(request)
      : listed.fieldRules !== undefined && request.headers.authorization !== undefined ? await app.accessTokens.authenticate(request) : undefined
    const reader = async (request: FastifyRequest) => readerOfList(request, resource)

    /** What `include=` asks: see `embedding`. */
    const includes = async (request: FastifyRequest, query: Query) => includesOf(app, request, shape.relations, query, auth.read === 'public')

    // A list relation's rows (`GET /users/{id}/watchedTasks`, `/tasks/{id}/watchers`): its target's own
    // list of them, with every list parameter of the target, once the caller may read this row.
    for (const { relation } of served.filter(({ relation }) => relation.list && relation.route !== false)) {
      const target = relation.target.resource as Resource
      const targetShape = restShape(target, resources)
      const targetModel = servedResourceOf(app, target, resources)
      const publicParent = auth.read === 'public'
      app.get(`/${plural}/:id/${relation.name}`, {
        config: withAuth(auth.read),
        schema: {
          tags,
          summary: `List the ${relation.name} of a ${resource.name}`,
          params: IdParams,
          // The row is the path's: a filter on a hasMany's key is not a parameter here.
          querystring: withoutFiltersOn(target, targetShape.listQuery, relation.kind === 'hasMany' ? relation.key : undefined),
          response: { 200: targetShape.list, ...errors(400, 401, 403, 404, 429) }
        }
      }, async (request, reply) => {
        const id = (request.params as Params).id
        // A public row's list of rows only signed-in callers read asks for the token.
        if (publicParent && target.auth.read !== 'public') await app.accessTokens.authenticate(request)
        if (!await model.readable(userOf(request), id, { readsAs: readsAsOf(app, request) })) throw notFound(resource.name)
        const query = request.query as Query
        const embedded = await includesOf(app, request, targetShape.relations, query, publicParent && target.auth.read === 'public')
        const page = await targetModel.list(await readerOfList(request, target), { ...query, fields: embedded.fields }, { of: { resource: resource.name, relation: relation.name, id }, readsAs: readsAsOf(app, request) })
        await embedded.embed(page.data)
        return sendList(request, reply, page)
      })
    }

    // `PUT/DELETE /{plural}/{id}/{relation}/{otherId}`: the links of its manyToMany relations.
    linkRoutes(app, { resource, resources, model, tags, withAuth })

    /** A page of the list as `query` asks, narrowed to the rows of one row of a relation's target when `under` is given. */
    const listed = async (request: FastifyRequest, reply: FastifyReply, under?: { relation: string, id: Key }) => {
      const query = request.query as Query
      const embedded = await includes(request, query)
      const page = await model.list(await reader(request), { ...query, fields: embedded.fields }, { under, readsAs: readsAsOf(app, request) })
      await embedded.embed(page.data)
      return sendList(request, reply, page)
    }

    if (!singular) {
      app.get(`/${plural}`, {
        config: withAuth(auth.read),
        schema: { tags, summary: `List ${plural}`, description: whoMay(resource, auth.read, true), querystring: schemas.listQuery, response: { 200: schemas.list, ...errors(400, 401, 403, 429) } }
      }, async (request, reply) => listed(request, reply))
    }

    // The rows of one row of each relation they are listed under: `GET /users/{id}/posts`, `/posts/{id}/comments`.
    for (const { relation: name, key } of resource.listedUnder) {
      const relation = served.find(({ relation }) => relation.name === name)?.relation
      if (relation === undefined) continue
      app.get(`/${pluralOf(relation.target)}/:id/${plural}`, {
        config: withAuth(auth.read),
        // The row is the path's: a filter on its key is not a parameter here.
        schema: { tags, summary: `List the ${plural} of a ${relation.target.name}`, description: whoMay(resource, auth.read, true), params: paramsOf(relation.target), querystring: withoutFiltersOn(resource, schemas.listQuery, key), response: { 200: schemas.list, ...errors(400, 401, 403, 404, 429) } }
      }, async (request, reply) => listed(request, reply, { relation: name, id: (request.params as Params).id }))
    }

    app.get(itemPath, {
      config: withAuth(auth.read),
      schema: { tags, summary: `Get ${one}`, description: whoMay(resource, auth.read), params: IdParams, querystring: schemas.itemQuery, response: { 200: schemas.selection, 304: NotModified, ...errors(400, 401, 403, 404, 429) } }
    }, async (request, reply) => {
      const query = request.query as Query
      const embedded = await includes(request, query)
      const row = found(await model.get(await reader(request), (request.params as Params).id, { fields: embedded.fields, readsAs: readsAsOf(app, request) }), missing)
      await embedded.embed([row])
      return sendEntity(request, reply, row)
    })

    if (auth.create !== false) {
      const rule = auth.create
      const bulk = resource.bulk.create
      // A body is one item or, where the declaration takes them, an array of items: an array's length
      // is bounded here, before anything else reads it, and each item is checked by the served resource
      // (its `field` naming the item). One object is checked as it always was.
      const bodyValidator: FastifySchemaCompiler<object> = (route) => {
        const one = validatorCompiler(route) as ReturnType<FastifySchemaCompiler<object>> & { errors?: unknown, schemaEnv?: unknown }
        if (route.httpPart !== 'body') return one
        const max = app.tandemConfig.bulkMaxItems
        const either = Object.assign((data: unknown, context?: unknown) => {
          if (!Array.isArray(data)) {
            const valid = (one as (data: unknown, context?: unknown) => unknown)(data, context)
            if (valid === false) either.errors = one.errors
            return valid
          }
          if (!bulk) return { error: badRequest(`${plural} are created one at a time: send one object`) }
          if (data.length === 0 || data.length > max) return { error: badRequest(`a batch takes 1 to ${max} items`) }
          return true
        }, { schemaEnv: one.schemaEnv, errors: null as unknown })
        return either as unknown as ReturnType<FastifySchemaCompiler<object>>
      }
      // Under a parent, the create is only there: `POST /posts/{id}/comments` (404 naming the parent).
      app.post(underPath ?? `/${plural}`, {
        config: { ...createConfig(rule), ...bulk ? { openapi: { body: Type.Union([schemas.create, Type.Array(schemas.create, { minItems: 1, maxItems: app.tandemConfig.bulkMaxItems })]), responses: { 201: Type.Union([schemas.item, batch], { description: 'The row; for an array, `{"data": [...]}`: the rows in the order given' }) } } } : {} },
        validatorCompiler: bodyValidator,
        schema: { tags, summary: resource.create?.summary ?? (under === undefined ? `Create a ${resource.name}` : `Create a ${resource.name} of a ${under.target.name}`), description: `${whoMay(resource, rule)}${createOwnerWords(resource)}${bulk ? ` An array of up to ${app.tandemConfig.bulkMaxItems} items creates them all in one transaction, or none: 201 with \`{"data": [...]}\` in the order given; an item refused answers as one create would, its \`field\` naming the item (\`[3].name\`).` : ''}`, ...under === undefined ? {} : { params: paramsOf(under.target) }, querystring: WriteQuery, body: schemas.create, response: { 201: schemas.item, ...errors(400, 401, 403, ...under === undefined ? [] : [404], 409, 413, 415, 422, 429) } }
      }, async (request, reply) => {
        const parent = under === undefined ? undefined : (request.params as Params).id
        const caller = rule === 'public' ? undefined : request.user
        const options = { db: async () => await request.writeDb(), afterCommit: (fn: () => void) => { request.afterCommit(fn) }, parent }
        if (Array.isArray(request.body)) {
          const rows = await model.createMany(caller, request.body as Array<Record<string, unknown>>, options)
          // Answered by a serializer of its own: one object's answer keeps the route's.
          return reply.code(201).serializer(reply.compileSerializationSchema(batch, '201') as (payload: unknown) => string).send({ data: rows })
        }
        const row = await model.create(caller, request.body as Record<string, unknown>, options)
        // Answered whole, field rules or not: its caller wrote it.
        // The new row's own path: `/api/v1/comments/7` for `POST /api/v1/posts/1/comments`.
        const path = (request.url.split('?')[0] ?? '').replace(/\/$/, '')
        const collection = under === undefined ? path : `${path.split('/').slice(0, -3).join('/')}/${plural}`
        return written(reply.code(201).header('location', `${collection}/${encodeURIComponent(String(row.id))}`), row)
      })
    }

    /** The declared filters of a change or deletion by filter, from the query string. */
    const whereOf = (request: FastifyRequest): Record<string, unknown> => {
      const { version: _version, ...filters } = request.query as Record<string, unknown>
      return filters
    }
    const bulkUpdate = resource.bulk.update
    if (bulkUpdate !== false) {
      app.patch(`/${plural}`, {
        config: withAuth(bulkUpdate),
        schema: { tags, summary: `Change some fields of every ${resource.name} the filters find`, description: `${whoMay(resource, bulkUpdate)} At least one filter; each row under the rules of a change (${whoMay(resource, auth.update as AccessRule).replace('may call it', 'may change it').replace(/\.$/, '')}), in one transaction; more than ${app.tandemConfig.bulkMaxItems} rows found is a 422, nothing changed.`, querystring: whereQuery, body: schemas.patch, response: { 200: BulkAnswer, ...errors(400, 401, 403, 409, 413, 415, 422, 429) } }
      }, async (request) => model.updateWhere(request.user, whereOf(request), request.body as Record<string, unknown>))
    }
    const bulkDelete = resource.bulk.delete
    if (bulkDelete !== false) {
      app.delete(`/${plural}`, {
        config: withAuth(bulkDelete),
        schema: { tags, summary: `Delete every ${resource.name} the filters find`, description: `${whoMay(resource, bulkDelete)} At least one filter; each row under the rules of a deletion (${whoMay(resource, auth.delete as AccessRule).replace('may call it', 'may delete it').replace(/\.$/, '')}), in one transaction; more than ${app.tandemConfig.bulkMaxItems} rows found is a 422, nothing deleted.`, querystring: whereQuery, response: { 200: BulkAnswer, ...errors(400, 401, 403, 409, 422, 429) } }
      }, async (request) => model.removeWhere(request.user, whereOf(request)))
    }

    if (auth.update !== false) {
      const rule = auth.update
      app.put(itemPath, {
        config: withAuth(rule),
        schema: { tags, summary: `Replace ${one}`, description: whoMay(resource, rule), params: IdParams, querystring: WriteQuery, body: schemas.replace, response: { 200: schemas.item, ...errors(400, 401, 403, 404, 409, 412, 413, 415, 422, 429) } }
      }, async (request, reply) => {
        const row = found(await model.replace(request.user, (request.params as Params).id, request.body as Record<string, unknown>, { check: ifMatch(request) }), missing)
        return written(reply, row)
      })

      app.patch(itemPath, {
        config: withAuth(rule),
        schema: { tags, summary: `Change some fields of ${one}`, description: whoMay(resource, rule), params: IdParams, querystring: WriteQuery, body: schemas.patch, response: { 200: schemas.item, ...errors(400, 401, 403, 404, 409, 412, 413, 415, 422, 429) } }
      }, async (request, reply) => {
        const row = found(await model.update(request.user, (request.params as Params).id, request.body as Record<string, unknown>, { check: ifMatch(request) }), missing)
        return written(reply, row)
      })
    }

    for (const [name, action] of Object.entries(resource.actions ?? {})) {
      app.post(`${itemPath}/${name}`, {
        config: withAuth(action.auth, true),
        schema: {
          tags,
          summary: action.summary ?? `${name} ${one}`,
          description: whoMay(resource, action.auth),
          params: IdParams,
          querystring: WriteQuery,
          // Closed like every other body of the API unless the host opened it; no body at all when there is no input.
          ...action.input === undefined ? {} : { body: { ...action.input, additionalProperties: action.input.additionalProperties ?? false } },
          response: { 200: schemas.item, ...errors(400, 401, 403, 404, 409, 412, 413, 415, 422, 429) }
        }
      }, async (request, reply) => {
        if (action.input === undefined && !isEmptyBody(request.body)) throw badRequest(`${name} takes no body`, 'body')
        const input = (request.body ?? {}) as Record<string, unknown>
        const row = found(await model.act(request.user, name, (request.params as Params).id, action.input === undefined ? {} : input, { db: async () => await request.writeDb(), check: ifMatch(request), afterCommit: (fn) => { request.afterCommit(fn) } }), missing)
        return written(reply, row)
      })
    }

    if (auth.delete !== false) {
      app.delete(`/${plural}/:id`, {
        config: withAuth(auth.delete),
        schema: { tags, summary: `Delete a ${resource.name}`, description: whoMay(resource, auth.delete), params: IdParams, querystring: WriteQuery, response: { 204: NoContent, ...errors(400, 401, 403, 404, 409, 412, 422, 429) } }
      }, async (request, reply) => {
        found(await model.remove(request.user, (request.params as Params).id, { check: ifMatch(request) }), resource.name)
        return reply.code(204).send(null)
      })
    }
  }
}
