import type { FastifyPluginAsync } from 'fastify'
import type { Resource } from '../schema/resource.js'
import authRoutes from './auth.js'
import ordersRoutes, { userOrdersRoutes } from './orders.js'
import postsRoutes, { userPostsRoutes } from './posts.js'

export { authRoutes, ordersRoutes, postsRoutes }

/**
 * The REST routes that are not a declared resource's own: sign-in and one-time tokens, and the posts
 * and orders of one user, to be mounted under a version prefix beside the declared resources' routes.
 * `resources` are the declared ones.
 */
export const resourceRoutes: FastifyPluginAsync<{ resources?: readonly Resource[] }> = async (app, { resources }) => {
  await app.register(authRoutes)
  await app.register(userOrdersRoutes, { resources })
  await app.register(userPostsRoutes, { resources })
}
