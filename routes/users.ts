import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { findUser, listUsers, userFilterFields, userSearchFields } from '../db/users.js'
import { requireAuth } from '../plugins/auth.js'
import { changeUser, removeUser, signUp } from '../rules/accounts.js'
import { narrowFilters, shownRow, shownRows } from '../rules/field-rules.js'
import { IdParams, ItemQuery, ListOf, NoContent, NotModified, WriteQuery, errors } from '../schema/common.js'
import { inverseRelations } from '../schema/relation-targets.js'
import type { Resource } from '../schema/resource.js'
import { UserView } from '../schema/user-views.js'
import { CreateUserBody, PatchUserBody, ReplaceUserBody, User, userFieldRules, UserListQuery } from '../schema/users.js'
import { parseInclude } from '../db/relations.js'
import { relationData } from '../db/resource.js'
import { embedUserRelations, userIncludes } from '../db/user-relations.js'
import { etagOf, ifMatch, sendEntity } from './conditional.js'
import { found, sendList } from './reply.js'
import { embedding, relatedListRoute, splitInclude, withAdded, withIncludable } from './related.js'

const tags = ['users']

/** Options of the users routes. */
export interface UsersRoutesOptions {
  /** Declared resources: those whose relations name an `inverse` on `user` add it (`include=labels`, `GET /users/{id}/labels`). */
  resources?: readonly Resource[]
}

/**
 * REST transport of the users resource: validation and serialization by schema, data from `db/users`.
 * An email is shown to its user and administrators only (`userFieldRules`); a sign-up answers its
 * caller the account whole, as they gave it.
 */
const usersRoutes: FastifyPluginAsync<UsersRoutesOptions> = async (fastify, options) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const secret = () => app.tandemConfig.jwtSecret
  // What declared resources add to users through `inverse`.
  const added = inverseRelations('user', options.resources ?? []).map(relationData)
  const view = withAdded(UserView, added)

  app.post('/users', {
    config: { transaction: true, attemptLimit: { kind: 'signUp', account: (request) => String((request.body as { email?: unknown }).email) } },
    schema: { tags, summary: 'Sign up', querystring: WriteQuery, body: CreateUserBody, response: { 201: User, ...errors(400, 409, 415, 429) } }
  }, async (request, reply) => {
    const user = await signUp(await request.writeDb(), request.body)
    return reply.code(201).header('location', `${request.url.split('?')[0]}/${user.id}`).send(user)
  })

  app.get('/users', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'List users', querystring: withIncludable(UserListQuery, userIncludes, added), response: { 200: ListOf(view), ...errors(400, 401, 429) } }
  }, async (request, reply) => {
    const { include: asked, ...params } = request.query
    const include = splitInclude(userIncludes, added, asked)
    parseInclude(userIncludes, include.builtIn)
    const shape = await embedding(app, request, include.added, params.fields, false)
    // An email filter (or `q`) finds only the caller's own address, unless they read every one.
    const narrow = (filters: Record<string, unknown>) => { narrowFilters(userFieldRules, request.user, filters, userFilterFields, userSearchFields) }
    const page = await listUsers(app.db, { ...params, fields: shape.fields }, { secret: secret() }, narrow)
    await Promise.all([embedUserRelations(app.db, page.data, include.builtIn), shape.embed(page.data)])
    return sendList(request, reply, { ...page, data: shownRows(userFieldRules, request.user, page.data) })
  })

  app.get('/users/:id', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'Get a user', params: IdParams, querystring: withIncludable(ItemQuery, userIncludes, added), response: { 200: view, 304: NotModified, ...errors(400, 401, 404, 429) } }
  }, async (request, reply) => {
    const include = splitInclude(userIncludes, added, request.query.include)
    parseInclude(userIncludes, include.builtIn)
    const shape = await embedding(app, request, include.added, request.query.fields, false)
    const user = found(await findUser(app.db, request.params.id, shape.fields), 'user')
    await Promise.all([embedUserRelations(app.db, [user], include.builtIn), shape.embed([user])])
    return sendEntity(request, reply, shownRow(userFieldRules, request.user, user))
  })

  for (const related of added.filter(({ relation }) => relation.list && relation.route !== false)) {
    relatedListRoute(app, {
      plural: 'users',
      parentName: 'user',
      tags,
      config: { auth: 'authenticated' },
      publicParent: false,
      related,
      parent: async (_request, id) => { found(await findUser(app.db, id, 'id'), 'user') }
    })
  }

  app.put('/users/:id', {
    config: { auth: 'selfOrAdmin' },
    schema: { tags, summary: 'Replace a user (a new email of your own needs current_password)', params: IdParams, querystring: WriteQuery, body: ReplaceUserBody, response: { 200: User, ...errors(400, 401, 403, 404, 409, 412, 415, 429) } }
  }, async (request, reply) => {
    const user = shownRow(userFieldRules, request.user, found(await changeUser(app, request.user, request.params.id, request.body, ifMatch(request)), 'user'))
    return reply.header('etag', etagOf(user)).send(user)
  })

  app.patch('/users/:id', {
    config: { auth: 'selfOrAdmin' },
    schema: { tags, summary: 'Change some fields of a user (a new email of your own needs current_password)', params: IdParams, querystring: WriteQuery, body: PatchUserBody, response: { 200: User, ...errors(400, 401, 403, 404, 409, 412, 415, 429) } }
  }, async (request, reply) => {
    const user = shownRow(userFieldRules, request.user, found(await changeUser(app, request.user, request.params.id, request.body, ifMatch(request)), 'user'))
    return reply.header('etag', etagOf(user)).send(user)
  })

  app.delete('/users/:id', {
    config: { auth: 'selfOrAdmin' },
    schema: { tags, summary: 'Delete a user; every session of theirs ends', params: IdParams, querystring: WriteQuery, response: { 204: NoContent, ...errors(400, 401, 403, 404, 412, 429) } }
  }, async (request, reply) => {
    if (!await removeUser(app, request.user, request.params.id, ifMatch(request))) throw found(undefined, 'user')
    return reply.code(204).send(null)
  })
}

export default usersRoutes
