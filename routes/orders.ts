// The orders' REST routes: those of their declaration (rules/orders.ts), as a host's declared
// resource has them, and the orders of one user.
import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { TObject } from '@sinclair/typebox'
import { parseInclude } from '../db/relations.js'
import { relationData } from '../db/resource.js'
import { requireAuth } from '../plugins/auth.js'
import { servedResources } from '../rules/built-in-resources.js'
import { orders } from '../rules/orders.js'
import { IdParams, ListOf, errors } from '../schema/common.js'
import { servedRelations } from '../schema/relation-targets.js'
import type { Resource } from '../schema/resource.js'
import { servedResourceOf } from '../rules/served-resources.js'
import { sendList } from './reply.js'
import { embedding, selectionWith, withIncludable } from './related.js'
import { declaredRoutes } from './resource.js'

type Query = Record<string, unknown> & { fields?: string, include?: string, status?: string }

/**
 * `GET /users/{id}/orders`: the user's orders for that user or an administrator (403 for anyone
 * else, 404 when there is no such user), with every list parameter and `include=` of orders. The path
 * names the owner, so its cursors are those of `GET /orders?user_id={id}` for the same caller. An `inverse` on users
 * would be served to any signed-in caller (narrowed to their own orders, so empty) and would add
 * `include=orders` to users, which the contract does not have.
 */
export const userOrdersRoutes: FastifyPluginAsync = async (fastify) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const served = [orders]
  const model = servedResourceOf(app, orders, served)
  const relations = servedRelations(orders, served).map(relationData)
  const names = relations.map(({ relation }) => relation.name)
  const querystring = withIncludable(orders.schemas.listQuery as TObject, [], relations)

  app.get('/users/:id/orders', {
    config: { auth: 'selfOrAdmin' },
    schema: { tags: ['orders'], summary: 'List a user\'s orders', params: IdParams, querystring, response: { 200: ListOf(selectionWith(orders.schemas.item, relations)), ...errors(400, 401, 403, 404, 429) } }
  }, async (request, reply) => {
    const query = request.query as Query
    const wanted = parseInclude(names, query.include)
    const shape = await embedding(app, request, relations.filter(({ relation }) => wanted.has(relation.name)), query.fields, false)
    const page = await model.list(request.user, { ...query, fields: shape.fields }, { owner: request.params.id })
    await shape.embed(page.data)
    return sendList(request, reply, page)
  })
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
  await app.register(userOrdersRoutes)
}

export default ordersRoutes
