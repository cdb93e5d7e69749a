import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { findProfile, updateProfile } from '../db/profiles.js'
import { parseInclude } from '../db/relations.js'
import { requireAuth } from '../plugins/auth.js'
import { IdParams, ItemQuery, WriteQuery, errors } from '../schema/common.js'
import { NotModified } from '../schema/common.js'
import { Profile, ProfileBody, ProfileFields } from '../schema/profiles.js'
import { etagOf, ifMatch, sendEntity } from './conditional.js'
import { found } from './reply.js'

const tags = ['profiles']

/** REST transport of profiles (one per user, made with it): data from `db/profiles`. */
const profilesRoutes: FastifyPluginAsync = async (fastify) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  app.get('/users/:id/profile', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'Get a user\'s profile', params: IdParams, querystring: ItemQuery, response: { 200: ProfileFields, 304: NotModified, ...errors(400, 401, 404, 429) } }
  }, async (request, reply) => {
    parseInclude([], request.query.include)
    return sendEntity(request, reply, found(await findProfile(app.db, request.params.id, request.query.fields), 'user'))
  })

  app.put('/users/:id/profile', {
    config: { auth: 'selfOrAdmin' },
    schema: { tags, summary: 'Replace a profile (fields left out become null)', params: IdParams, querystring: WriteQuery, body: ProfileBody, response: { 200: Profile, ...errors(400, 401, 403, 404, 412, 413, 415, 429) } }
  }, async (request, reply) => {
    const { bio = null, avatar_url: avatarUrl = null, location = null } = request.body
    const profile = found(await updateProfile(app.db, request.params.id, { bio, avatar_url: avatarUrl, location }, ifMatch(request)), 'user')
    return reply.header('etag', etagOf(profile)).send(profile)
  })

  app.patch('/users/:id/profile', {
    config: { auth: 'selfOrAdmin' },
    schema: { tags, summary: 'Change some fields of a profile (null clears one)', params: IdParams, querystring: WriteQuery, body: ProfileBody, response: { 200: Profile, ...errors(400, 401, 403, 404, 412, 413, 415, 429) } }
  }, async (request, reply) => {
    const profile = found(await updateProfile(app.db, request.params.id, request.body, ifMatch(request)), 'user')
    return reply.header('etag', etagOf(profile)).send(profile)
  })
}

export default profilesRoutes
