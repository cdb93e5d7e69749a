// The orders' REST routes: those of their declaration (rules/orders.ts), as a host's declared
// resource has them, and the orders of one user.
import type { FastifyPluginAsync } from 'fastify'
import { requireAuth } from '../plugins/auth.js'
import { servedResources } from '../rules/built-in-resources.js'
import { orders } from '../rules/orders.js'
import type { Resource } from '../schema/resource.js'
import { ownerListRoute } from './owner-list.js'
import { declaredRoutes } from './resource.js'

/**
 * `GET /users/{id}/orders`: the user's orders for that user or an administrator (403 for anyone
 * else, 404 when there is no such user), with every list parameter and `include=` of orders. The path
 * names the owner, so its cursors are those of `GET /orders?user_id={id}` for the same caller. An `inverse` on users
 * would be served to any signed-in caller (narrowed to their own orders, so empty) and would add
 * `include=orders` to users, which the contract does not have.
 */
export const userOrdersRoutes: FastifyPluginAsync<OrdersRoutesOptions> = async (app, options) => {
  requireAuth(app)
  ownerListRoute(app, { resource: orders, resources: servedResources(options.resources), ownerPlural: 'users', auth: 'selfOrAdmin', summary: 'List a user\'s orders' })
}

/** Options of the orders routes. */
export interface OrdersRoutesOptions {
  /** The declared resources served beside orders. */
  resources?: readonly Resource[]
}

/**
 * Every route of orders: `GET/POST /orders`, `GET /orders/{id}`, `POST /orders/{id}/cancel`, `/pay`
 * and `/ship`, and `GET /users/{id}/orders`.
 */
const ordersRoutes: FastifyPluginAsync<OrdersRoutesOptions> = async (app, options) => {
  await app.register(declaredRoutes(orders, servedResources(options.resources)))
  await app.register(userOrdersRoutes, { resources: options.resources })
}

export default ordersRoutes
