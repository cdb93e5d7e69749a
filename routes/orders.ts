import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { createOrder, findOrder, listOrders, orderOwner, transitionOrder, type Transition } from '../db/orders.js'
import { findUser } from '../db/users.js'
import { ownerOrAdmin, requireAuth } from '../plugins/auth.js'
import { IdParams, ItemQuery, WriteQuery, errors } from '../schema/common.js'
import { CreateOrderBody, Order, OrderFields, OrderList, OrderListQuery } from '../schema/orders.js'
import { sendEntity } from './conditional.js'
import { found, sendList } from './reply.js'

const tags = ['orders']

/** Orders: placed by signed-in users, read and cancelled by their owner or an administrator. */
const ordersRoutes: FastifyPluginAsync = async (fastify) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const secret = () => app.tandemConfig.jwtSecret
  const owner = ownerOrAdmin(async (request) => orderOwner(app.db, (request.params as { id: number }).id))

  app.post('/orders', {
    config: { auth: 'authenticated', transaction: true },
    schema: { tags, summary: 'Place an order; its stock is taken at once', querystring: WriteQuery, body: CreateOrderBody, response: { 201: Order, ...errors(400, 401, 409, 413, 415, 422, 429) } }
  }, async (request, reply) => {
    const order = await createOrder(request.db, request.user.sub, request.body.items)
    return reply.code(201).header('location', `${request.url.split('?')[0]}/${order.id}`).send(order)
  })

  app.get('/orders', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'List orders: all of them for administrators, one\'s own otherwise', querystring: OrderListQuery, response: { 200: OrderList, ...errors(400, 401, 429) } }
  }, async (request, reply) => {
    const mine = request.user.role === 'admin' ? undefined : request.user.sub
    return sendList(request, reply, await listOrders(app.db, { ...request.query, user_id: mine }, { secret: secret() }))
  })

  app.get('/users/:id/orders', {
    config: { auth: 'selfOrAdmin' },
    schema: { tags, summary: 'List a user\'s orders', params: IdParams, querystring: OrderListQuery, response: { 200: OrderList, ...errors(400, 401, 403, 404, 429) } }
  }, async (request, reply) => {
    found(await findUser(app.db, request.params.id, 'id'), 'user')
    return sendList(request, reply, await listOrders(app.db, { ...request.query, user_id: request.params.id }, { secret: secret() }))
  })

  app.get('/orders/:id', {
    config: { auth: owner },
    schema: { tags, summary: 'Get an order', params: IdParams, querystring: ItemQuery, response: { 200: OrderFields, ...errors(400, 401, 403, 404, 429) } }
  }, async (request, reply) => {
    const { fields, include } = request.query
    return sendEntity(request, reply, found(await findOrder(app.db, request.params.id, fields, include), 'order'))
  })

  const transition = (name: Transition) => async (request: FastifyRequest<{ Params: { id: number } }>) =>
    found(await transitionOrder(request.db, request.params.id, name), 'order')
  const transitionSchema = (summary: string) => ({
    tags, summary, params: IdParams, querystring: WriteQuery, response: { 200: Order, ...errors(400, 401, 403, 404, 409, 422, 429) }
  })

  app.post('/orders/:id/cancel', {
    config: { auth: owner, transaction: true },
    schema: transitionSchema('Cancel a pending or paid order; its stock is given back')
  }, transition('cancel'))

  app.post('/orders/:id/pay', {
    config: { auth: 'admin', transaction: true },
    schema: transitionSchema('Mark a pending order paid')
  }, transition('pay'))

  app.post('/orders/:id/ship', {
    config: { auth: 'admin', transaction: true },
    schema: transitionSchema('Mark a paid order shipped')
  }, transition('ship'))
}

export default ordersRoutes
