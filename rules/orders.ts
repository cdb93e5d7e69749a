// Orders (CONTRACT §2), declared with the public `defineResource`, as a host declares its own
// resources: a signed-in user places them and reads their own, an administrator reads them all; the
// owner or an administrator cancels one, an administrator marks it paid and shipped. They are never
// changed nor deleted otherwise. The stock they take and give back is the data layer's (db/orders.ts).
import type { Static } from '@sinclair/typebox'
import { itemsOf, moveOrder, placeOrder, placeOrders, type OrderLine, type Transition } from '../db/orders.js'
import { CreateOrderBody, Order } from '../schema/orders.js'
import { defineResource } from '../schema/resource.js'
import type { ActionDeclaration } from '../schema/resource-hooks.js'

/** An action that moves the order (locked by the action, its items loaded) along its transitions. */
const move = (transition: Transition, summary: string, auth: 'ownerOrAdmin' | 'admin'): ActionDeclaration<Static<typeof Order>> => ({
  auth,
  summary,
  run: async ({ trx, row }) => await moveOrder(trx, row, transition)
})

export const orders = defineResource({
  name: 'order',
  table: 'orders',
  representation: Order,
  generated: ['id', 'status', 'total', 'created_at'],
  owner: 'user_id',
  // Nothing of an order is written by a body: it is placed from its items, then moved by its actions.
  writable: [],
  loaded: { items: { load: itemsOf } },
  create: {
    input: CreateOrderBody,
    summary: 'Place an order; its stock is taken at once',
    // The rule is `authenticated`: there is always a caller.
    run: async ({ trx, caller, input }) => await placeOrder(trx, caller?.sub as number, input.items as OrderLine[]),
    // A batch in four statements: its products locked in id order, then taken, ordered and listed at once.
    runMany: async ({ trx, caller, inputs }) => await placeOrders(trx, caller?.sub as number, inputs.map((input) => input.items as OrderLine[]))
  },
  sort: ['created_at', 'total'],
  filters: ['status', 'user_id'],
  relations: {
    // `GET /users/{id}/orders`: a user's orders, for that user (their read rule: 403 for another's) or an administrator.
    user: { belongsTo: 'user', key: 'user_id', required: true, under: 'also' }
  },
  auth: { read: 'ownerOrAdmin', create: 'authenticated', update: false, delete: false },
  // Another user's order is 403, not hidden.
  othersRows: 'forbidden',
  actions: {
    cancel: move('cancel', 'Cancel a pending or paid order; its stock is given back', 'ownerOrAdmin'),
    pay: move('pay', 'Mark a pending order paid', 'admin'),
    ship: move('ship', 'Mark a paid order shipped', 'admin')
  }
})
