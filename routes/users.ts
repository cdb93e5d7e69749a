import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { findUser, listUsers } from '../db/users.js'
import { requireAuth } from '../plugins/auth.js'
import { changeUser, removeUser, signUp } from '../rules/accounts.js'
import { IdParams, ItemQuery, NoContent, NotModified, WriteQuery, errors } from '../schema/common.js'
import { UserView, UserViewList } from '../schema/user-views.js'
import { CreateUserBody, PatchUserBody, ReplaceUserBody, User, UserListQuery } from '../schema/users.js'
import { parseInclude } from '../db/relations.js'
import { embedUserRelations, userIncludes } from '../db/user-relations.js'
import { etagOf, ifMatch, sendEntity } from './conditional.js'
import { found, sendList } from './reply.js'

const tags = ['users']

/** REST transport of the users resource: validation and serialization by schema, data from `db/users`. */
const usersRoutes: FastifyPluginAsync = async (fastify) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const secret = () => app.tandemConfig.jwtSecret

  app.post('/users', {
    config: { transaction: true, attemptLimit: { kind: 'signUp', account: (request) => String((request.body as { email?: unknown }).email) } },
    schema: { tags, summary: 'Sign up', querystring: WriteQuery, body: CreateUserBody, response: { 201: User, ...errors(400, 409, 415, 429) } }
  }, async (request, reply) => {
    const user = await signUp(request.db, request.body)
    return reply.code(201).header('location', `${request.url.split('?')[0]}/${user.id}`).send(user)
  })

  app.get('/users', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'List users', querystring: UserListQuery, response: { 200: UserViewList, ...errors(400, 401, 429) } }
  }, async (request, reply) => {
    const { include, ...params } = request.query
    parseInclude(userIncludes, include)
    const page = await listUsers(app.db, params, { secret: secret() })
    await embedUserRelations(app.db, page.data, include)
    return sendList(request, reply, page)
  })

  app.get('/users/:id', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'Get a user', params: IdParams, querystring: ItemQuery, response: { 200: UserView, 304: NotModified, ...errors(400, 401, 404, 429) } }
  }, async (request, reply) => {
    parseInclude(userIncludes, request.query.include)
    const user = found(await findUser(app.db, request.params.id, request.query.fields), 'user')
    await embedUserRelations(app.db, [user], request.query.include)
    return sendEntity(request, reply, user)
  })

  app.put('/users/:id', {
    config: { auth: 'selfOrAdmin' },
    schema: { tags, summary: 'Replace a user (a new email of your own needs current_password)', params: IdParams, querystring: WriteQuery, body: ReplaceUserBody, response: { 200: User, ...errors(400, 401, 403, 404, 409, 412, 415, 429) } }
  }, async (request, reply) => {
    const user = found(await changeUser(app, request.user, request.params.id, request.body, ifMatch(request)), 'user')
    return reply.header('etag', etagOf(user)).send(user)
  })

  app.patch('/users/:id', {
    config: { auth: 'selfOrAdmin' },
    schema: { tags, summary: 'Change some fields of a user (a new email of your own needs current_password)', params: IdParams, querystring: WriteQuery, body: PatchUserBody, response: { 200: User, ...errors(400, 401, 403, 404, 409, 412, 415, 429) } }
  }, async (request, reply) => {
    const user = found(await changeUser(app, request.user, request.params.id, request.body, ifMatch(request)), 'user')
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
