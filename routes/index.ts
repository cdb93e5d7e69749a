import type { FastifyPluginAsync } from 'fastify'
import type { Resource } from '../schema/resource.js'
import authRoutes from './auth.js'
import ordersRoutes, { userOrdersRoutes } from './orders.js'
import postsRoutes, { userPostsRoutes } from './posts.js'
import usersRoutes from './users.js'

export { authRoutes, ordersRoutes, postsRoutes, usersRoutes }

/**
 * The REST routes of every resource not declared with `defineResource` (and the posts and orders of a user), to
 * be mounted under a version prefix beside the declared resources' routes. `resources` are the
 * declared ones, whose `inverse` relations users and posts serve too.
 */
export const resourceRoutes: FastifyPluginAsync<{ resources?: readonly Resource[] }> = async (app, { resources }) => {
  await app.register(authRoutes)
  await app.register(usersRoutes, { resources })
  await app.register(userOrdersRoutes)
  await app.register(userPostsRoutes, { resources })
}
