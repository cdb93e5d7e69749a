// The posts' REST routes: those of their declaration (rules/posts.ts), as a host's declared resource
// has them, and the posts of one user.
import type { FastifyPluginAsync } from 'fastify'
import { requireAuth } from '../plugins/auth.js'
import { servedResources } from '../rules/built-in-resources.js'
import { posts } from '../rules/posts.js'
import type { Resource } from '../schema/resource.js'
import { ownerListRoute } from './owner-list.js'
import { declaredRoutes } from './resource.js'

/** Options of the posts routes. */
export interface PostsRoutesOptions {
  /** Declared resources: those whose relations name an `inverse` on `post` add it (`include=labels`, `GET /posts/{id}/labels`). */
  resources?: readonly Resource[]
}

/**
 * `GET /users/{id}/posts`: the posts list with its author fixed by the path (its cursors are those
 * of `GET /posts?author_id={id}`), with every list parameter and `include=` of posts; 404 when there
 * is no such user. `resources` are the resources served with posts (their inverses are included too).
 */
export const userPostsRoutes: FastifyPluginAsync<PostsRoutesOptions> = async (app, options) => {
  requireAuth(app)
  ownerListRoute(app, { resource: posts, resources: servedResources(options.resources), ownerPlural: 'users', auth: 'authenticated', summary: 'List the posts of a user' })
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
