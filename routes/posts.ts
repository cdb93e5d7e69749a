import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { createPost, deletePost, findPost, listPosts, listUserPosts, postAuthor, postIncludes, updatePost } from '../db/posts.js'
import { relationData } from '../db/resource.js'
import { ownerOrAdmin, requireAuth } from '../plugins/auth.js'
import type { TandemEventMap } from '../plugins/events.js'
import { IdParams, ItemQuery, ListOf, NoContent, NotModified, WriteQuery, errors } from '../schema/common.js'
import { notFound } from '../schema/errors.js'
import { CreatePostBody, PatchPostBody, Post, PostFields, PostListQuery, ReplacePostBody, UserPostListQuery } from '../schema/posts.js'
import { inverseRelations } from '../schema/relation-targets.js'
import type { Resource } from '../schema/resource.js'
import { tellSubscribers } from '../rules/events.js'
import { authorOf } from '../rules/posts.js'
import { etagOf, ifMatch, sendEntity } from './conditional.js'
import { found, sendList } from './reply.js'
import { embedding, relatedListRoute, splitInclude, withAdded, withIncludable } from './related.js'

const tags = ['posts']

/**
 * Tells GraphQL subscribers of a write once it is committed: after the Idempotency-Key's
 * transaction, if the request has one.
 */
export function announce<T extends keyof TandemEventMap> (request: FastifyRequest, topic: T, payload: TandemEventMap[T]): void {
  request.afterCommit(() => { tellSubscribers(request.server, topic, payload) })
}

/** Options of the posts routes. */
export interface PostsRoutesOptions {
  /** Declared resources: those whose relations name an `inverse` on `post` add it (`include=labels`, `GET /posts/{id}/labels`). */
  resources?: readonly Resource[]
}

/** REST transport of posts: validation and serialization by schema, data from `db/posts`. */
const postsRoutes: FastifyPluginAsync<PostsRoutesOptions> = async (fastify, options) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const secret = () => app.tandemConfig.jwtSecret
  const author = ownerOrAdmin(async (request: FastifyRequest) => postAuthor(app.db, (request.params as { id: number }).id))
  // What declared resources add to posts through `inverse`.
  const added = inverseRelations('post', options.resources ?? []).map(relationData)
  const view = withAdded(PostFields, added)
  const includes = async (request: FastifyRequest, query: { fields?: string | undefined, include?: string | undefined }) => {
    const asked = splitInclude(postIncludes, added, query.include)
    const shape = await embedding(app, request, asked.added, query.fields, false)
    return { shape: { fields: shape.fields, include: asked.builtIn }, embed: shape.embed }
  }

  app.get('/posts', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'List posts', querystring: withIncludable(PostListQuery, postIncludes, added), response: { 200: ListOf(view), ...errors(400, 401, 429) } }
  }, async (request, reply) => {
    const { shape, embed } = await includes(request, request.query)
    const page = await listPosts(app.db, { ...request.query, ...shape }, { secret: secret() })
    await embed(page.data)
    return sendList(request, reply, page)
  })

  app.get('/users/:id/posts', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'List the posts of a user', params: IdParams, querystring: withIncludable(UserPostListQuery, postIncludes, added), response: { 200: ListOf(view), ...errors(400, 401, 404, 429) } }
  }, async (request, reply) => {
    const { shape, embed } = await includes(request, request.query)
    const page = found(await listUserPosts(app.db, request.params.id, { ...request.query, ...shape }, { secret: secret() }), 'user')
    await embed(page.data)
    return sendList(request, reply, page)
  })

  app.get('/posts/:id', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'Get a post', params: IdParams, querystring: withIncludable(ItemQuery, postIncludes, added), response: { 200: view, 304: NotModified, ...errors(400, 401, 404, 429) } }
  }, async (request, reply) => {
    const { shape, embed } = await includes(request, request.query)
    const post = found(await findPost(app.db, request.params.id, shape), 'post')
    await embed([post])
    return sendEntity(request, reply, post)
  })

  for (const related of added.filter(({ relation }) => relation.list)) {
    relatedListRoute(app, {
      plural: 'posts',
      parentName: 'post',
      tags,
      config: { auth: 'authenticated' },
      publicParent: false,
      related,
      parent: async (_request, id) => { found(await postAuthor(app.db, id), 'post') }
    })
  }

  app.post('/posts', {
    config: { auth: 'authenticated', transaction: true },
    schema: { tags, summary: 'Write a post (as its author; an administrator may name another)', querystring: WriteQuery, body: CreatePostBody, response: { 201: Post, ...errors(400, 401, 403, 409, 413, 415, 422, 429) } }
  }, async (request, reply) => {
    const { author_id: requested, ...fields } = request.body
    const post = await createPost(request.db, { authorId: authorOf(request.user, requested), ...fields })
    announce(request, 'postCreated', { post: { ...post } })
    const collection = (request.url.split('?')[0] ?? '').replace(/\/$/, '')
    return reply.code(201).header('location', `${collection}/${post.id}`).header('etag', etagOf(post)).send(post)
  })

  app.put('/posts/:id', {
    config: { auth: author },
    schema: { tags, summary: 'Replace a post', params: IdParams, querystring: WriteQuery, body: ReplacePostBody, response: { 200: Post, ...errors(400, 401, 403, 404, 412, 413, 415, 429) } }
  }, async (request, reply) => {
    const post = found(await updatePost(app.db, request.params.id, request.body, ifMatch(request)), 'post')
    return reply.header('etag', etagOf(post)).send(post)
  })

  app.patch('/posts/:id', {
    config: { auth: author },
    schema: { tags, summary: 'Change some fields of a post', params: IdParams, querystring: WriteQuery, body: PatchPostBody, response: { 200: Post, ...errors(400, 401, 403, 404, 412, 413, 415, 429) } }
  }, async (request, reply) => {
    const post = found(await updatePost(app.db, request.params.id, request.body, ifMatch(request)), 'post')
    return reply.header('etag', etagOf(post)).send(post)
  })

  app.delete('/posts/:id', {
    config: { auth: author },
    schema: { tags, summary: 'Delete a post and its comments', params: IdParams, querystring: WriteQuery, response: { 204: NoContent, ...errors(400, 401, 403, 404, 412, 429) } }
  }, async (request, reply) => {
    if (!await deletePost(app.db, request.params.id, ifMatch(request))) throw notFound('post')
    return reply.code(204).send(null)
  })
}

export default postsRoutes
