import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { createUser, deleteUser, findUser, listUsers, updateUser } from '../db/users.js'
import { hashPassword } from '../plugins/passwords.js'
import { IdParams, ItemQuery, NoContent, WriteQuery, errors } from '../schema/common.js'
import { CreateUserBody, PatchUserBody, ReplaceUserBody, User, UserFields, UserList, UserListQuery } from '../schema/users.js'
import { found, sendList } from './reply.js'

const tags = ['users']

/** REST transport of the users resource: validation and serialization by schema, data from `db/users`. */
const usersRoutes: FastifyPluginAsync = async (fastify) => {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const secret = () => app.tandemConfig.jwtSecret

  app.post('/users', {
    schema: { tags, summary: 'Sign up', querystring: WriteQuery, body: CreateUserBody, response: { 201: User, ...errors(400, 409, 415, 429) } }
  }, async (request, reply) => {
    const { password, ...rest } = request.body
    const user = await createUser(app.db, { ...rest, passwordHash: password === undefined ? null : await hashPassword(password) })
    return reply.code(201).header('location', `${request.url.split('?')[0]}/${user.id}`).send(user)
  })

  app.get('/users', {
    schema: { tags, summary: 'List users', querystring: UserListQuery, response: { 200: UserList, ...errors(400, 401, 429) } }
  }, async (request, reply) => sendList(request, reply, await listUsers(app.db, request.query, { secret: secret() })))

  app.get('/users/:id', {
    schema: { tags, summary: 'Get a user', params: IdParams, querystring: ItemQuery, response: { 200: UserFields, ...errors(400, 401, 404, 429) } }
  }, async (request) => found(await findUser(app.db, request.params.id, request.query.fields), 'user'))

  app.put('/users/:id', {
    schema: { tags, summary: 'Replace a user', params: IdParams, querystring: WriteQuery, body: ReplaceUserBody, response: { 200: User, ...errors(400, 401, 403, 404, 409, 415, 429) } }
  }, async (request) => found(await updateUser(app.db, request.params.id, request.body), 'user'))

  app.patch('/users/:id', {
    schema: { tags, summary: 'Change some fields of a user', params: IdParams, querystring: WriteQuery, body: PatchUserBody, response: { 200: User, ...errors(400, 401, 403, 404, 409, 415, 429) } }
  }, async (request) => found(await updateUser(app.db, request.params.id, request.body), 'user'))

  app.delete('/users/:id', {
    schema: { tags, summary: 'Delete a user', params: IdParams, querystring: WriteQuery, response: { 204: NoContent, ...errors(400, 401, 403, 404, 429) } }
  }, async (request, reply) => {
    if (!await deleteUser(app.db, request.params.id)) throw found(undefined, 'user')
    return reply.code(204).send(null)
  })
}

export default usersRoutes
