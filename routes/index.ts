import type { FastifyPluginAsync } from 'fastify'
import authRoutes from './auth.js'
import commentsRoutes from './comments.js'
import ordersRoutes from './orders.js'
import postsRoutes from './posts.js'
import productsRoutes from './products.js'
import profilesRoutes from './profiles.js'
import usersRoutes from './users.js'

export { authRoutes, commentsRoutes, ordersRoutes, postsRoutes, productsRoutes, profilesRoutes, usersRoutes }

/** Every resource's REST routes, to be mounted under a version prefix. */
export const resourceRoutes: FastifyPluginAsync = async (app) => {
  await app.register(authRoutes)
  await app.register(usersRoutes)
  await app.register(productsRoutes)
  await app.register(ordersRoutes)
  await app.register(postsRoutes)
  await app.register(commentsRoutes)
  await app.register(profilesRoutes)
}
