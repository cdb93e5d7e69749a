import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { commentAuthor, createComment, deleteComment, listComments } from '../db/comments.js'
import { ownerOrAdmin, requireAuth } from '../plugins/auth.js'
import { IdParams, NoContent, WriteQuery, errors } from '../schema/common.js'
import { notFound } from '../schema/errors.js'
import { Comment, CommentList, CommentListQuery, CreateCommentBody } from '../schema/comments.js'
import { ifMatch } from './conditional.js'
import { announce } from './posts.js'
import { found, sendList } from './reply.js'

const tags = ['comments']

/** REST transport of comments: validation and serialization by schema, data from `db/comments`. */
const commentsRoutes: FastifyPluginAsync = async (fastify) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const secret = () => app.tandemConfig.jwtSecret
  const author = ownerOrAdmin(async (request: FastifyRequest) => commentAuthor(app.db, (request.params as { id: number }).id))

  app.get('/posts/:id/comments', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'List the comments on a post', params: IdParams, querystring: CommentListQuery, response: { 200: CommentList, ...errors(400, 401, 404, 429) } }
  }, async (request, reply) => sendList(request, reply, found(await listComments(app.db, request.params.id, request.query, { secret: secret() }), 'post')))

  app.post('/posts/:id/comments', {
    config: { auth: 'authenticated', transaction: true },
    schema: { tags, summary: 'Comment on a post', params: IdParams, querystring: WriteQuery, body: CreateCommentBody, response: { 201: Comment, ...errors(400, 401, 404, 409, 413, 415, 422, 429) } }
  }, async (request, reply) => {
    const comment = found(await createComment(request.db, { postId: request.params.id, authorId: request.user.sub, text: request.body.text }), 'post')
    announce(request, 'commentAdded', { comment: { ...comment } })
    return reply.code(201).send(comment)
  })

  app.delete('/comments/:id', {
    config: { auth: author },
    schema: { tags, summary: 'Delete a comment', params: IdParams, querystring: WriteQuery, response: { 204: NoContent, ...errors(400, 401, 403, 404, 412, 429) } }
  }, async (request, reply) => {
    if (!await deleteComment(app.db, request.params.id, ifMatch(request))) throw notFound('comment')
    return reply.code(204).send(null)
  })
}

export default commentsRoutes
