import type { FastifyPluginAsync } from 'fastify'
import usersRoutes from './users.js'

export { usersRoutes }

/** Every resource's REST routes, to be mounted under a version prefix. */
export const resourceRoutes: FastifyPluginAsync = async (app) => {
  await app.register(usersRoutes)
}
