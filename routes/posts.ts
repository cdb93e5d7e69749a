// The posts' REST routes: those of their declaration (rules/posts.ts), as a host's declared resource
// has them, and the posts of one user.
import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { parseInclude } from '../db/relations.js'
import { relationData, resourceData } from '../db/resource.js'
import { requireAuth } from '../plugins/auth.js'
import { servedResources } from '../rules/built-in-resources.js'
import { posts } from '../rules/posts.js'
import { IdParams, ListOf, ListQuery, errors } from '../schema/common.js'
import { servedRelations } from '../schema/relation-targets.js'
import type { Resource } from '../schema/resource.js'
import { servedResourceOf } from '../rules/served-resources.js'
import { sendList } from './reply.js'
import { embedding, selectionWith, withIncludable } from './related.js'
import { declaredRoutes } from './resource.js'

/** Options of the posts routes. */
export interface PostsRoutesOptions {
  /** Declared resources: those whose relations name an `inverse` on `post` add it (`include=labels`, `GET /posts/{id}/labels`). */
  resources?: readonly Resource[]
}

type Query = Record<string, unknown> & { fields?: string, include?: string, q?: string }

/**
 * `GET /users/{id}/posts`: the posts list with its author fixed by the path (its cursors are those
 * of `GET /posts?author_id={id}`), with every list parameter and `include=` of posts; 404 when there
 * is no such user. `resources` are the resources served with posts (their inverses are included too).
 */
export const userPostsRoutes: FastifyPluginAsync<PostsRoutesOptions> = async (fastify, options) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const served = options.resources ?? [posts]
  const model = servedResourceOf(app, posts, served)
  const relations = servedRelations(posts, served).map(relationData)
  const names = relations.map(({ relation }) => relation.name)
  // The author is the path's: `author_id` is not a parameter here.
  const querystring = withIncludable(ListQuery(Object.keys(resourceData(posts).list.sortable), {}), [], relations)

  app.get('/users/:id/posts', {
    config: { auth: 'authenticated' },
    schema: { tags: ['posts'], summary: 'List the posts of a user', params: IdParams, querystring, response: { 200: ListOf(selectionWith(posts.schemas.item, relations)), ...errors(400, 401, 404, 429) } }
  }, async (request, reply) => {
    const query = request.query as Query
    const wanted = parseInclude(names, query.include)
    const shape = await embedding(app, request, relations.filter(({ relation }) => wanted.has(relation.name)), query.fields, false)
    const page = await model.list(request.user, { ...query, fields: shape.fields }, { owner: request.params.id })
    await shape.embed(page.data)
    return sendList(request, reply, page)
  })
}

/**
 * Every route of posts: `GET/POST /posts`, `GET/PUT/PATCH/DELETE /posts/{id}`, the nested lists of
 * the relations declared resources add (`/posts/{id}/labels`), and `GET /users/{id}/posts`.
 */
const postsRoutes: FastifyPluginAsync<PostsRoutesOptions> = async (app, options) => {
  const served = servedResources(options.resources)
  await app.register(declaredRoutes(posts, served))
  await app.register(userPostsRoutes, { resources: served })
}

export default postsRoutes
