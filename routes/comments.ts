import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { commentAuthor, createComment, deleteComment, listComments } from '../db/comments.js'
import { relationData } from '../db/resource.js'
import { ownerOrAdmin, requireAuth } from '../plugins/auth.js'
import { IdParams, ListOf, NoContent, WriteQuery, errors } from '../schema/common.js'
import { notFound } from '../schema/errors.js'
import { Comment, CommentFields, CommentListQuery, CreateCommentBody } from '../schema/comments.js'
import { inverseRelations } from '../schema/relation-targets.js'
import type { Resource } from '../schema/resource.js'
import type { TandemEventMap } from '../plugins/events.js'
import { tellSubscribers } from '../rules/events.js'
import { ifMatch } from './conditional.js'
import { found, sendList } from './reply.js'
import { embedding, relatedListRoute, splitInclude, withAdded, withIncludable } from './related.js'

const tags = ['comments']

/**
 * Tells GraphQL subscribers of a write once it is committed: after the Idempotency-Key's
 * transaction, if the request has one.
 */
function announce<T extends keyof TandemEventMap> (request: FastifyRequest, topic: T, payload: TandemEventMap[T]): void {
  request.afterCommit(() => { tellSubscribers(request.server, topic, payload) })
}

/** Options of the comments routes. */
export interface CommentsRoutesOptions {
  /** Declared resources: those whose relations name an `inverse` on `comment` add it (`include=`, `GET /comments/{id}/…`). */
  resources?: readonly Resource[]
}

/** REST transport of comments: validation and serialization by schema, data from `db/comments`. */
const commentsRoutes: FastifyPluginAsync<CommentsRoutesOptions> = async (fastify, options) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const secret = () => app.tandemConfig.jwtSecret
  const author = ownerOrAdmin(async (request: FastifyRequest) => commentAuthor(app.db, (request.params as { id: number }).id))
  // What declared resources add to comments through `inverse`.
  const added = inverseRelations('comment', options.resources ?? []).map(relationData)

  app.get('/posts/:id/comments', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'List the comments on a post', params: IdParams, querystring: withIncludable(CommentListQuery, [], added), response: { 200: ListOf(withAdded(CommentFields, added)), ...errors(400, 401, 404, 429) } }
  }, async (request, reply) => {
    const include = splitInclude([], added, request.query.include)
    const shape = await embedding(app, request, include.added, request.query.fields, false)
    const page = found(await listComments(app.db, request.params.id, { ...request.query, include: include.builtIn, fields: shape.fields }, { secret: secret() }), 'post')
    await shape.embed(page.data)
    return sendList(request, reply, page)
  })

  for (const related of added.filter(({ relation }) => relation.list)) {
    relatedListRoute(app, {
      plural: 'comments',
      parentName: 'comment',
      tags,
      config: { auth: 'authenticated' },
      publicParent: false,
      related,
      parent: async (_request, id) => { found(await commentAuthor(app.db, id), 'comment') }
    })
  }

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
