import { Type } from '@sinclair/typebox'
import { Id, StringEnum, Timestamp } from './common.js'

export const orderStatuses = ['pending', 'paid', 'shipped', 'cancelled'] as const
const Status = StringEnum(orderStatuses)
const Amount = Type.Number({ minimum: 0 })
const Quantity = Type.Integer({ minimum: 1, maximum: 10_000 })

// The titles name the GraphQL types of the orders' declaration (rules/orders.ts).
export const OrderItem = Type.Object({
  product_id: Id,
  quantity: Quantity,
  unit_price: Type.Number({ minimum: 0, description: 'The product\'s price when the order was placed.' })
}, { additionalProperties: false, title: 'OrderItem' })

/** An order: its items are the rows of `order_items`, loaded with it. */
export const Order = Type.Object({
  id: Id,
  user_id: Id,
  status: Status,
  items: Type.Array(OrderItem),
  total: Amount,
  created_at: Timestamp
}, { additionalProperties: false })

export const CreateOrderBody = Type.Object({
  items: Type.Array(Type.Object({
    product_id: Id,
    quantity: Quantity
  }, { additionalProperties: false, title: 'OrderLineInput' }), {
    minItems: 1,
    maxItems: 100,
    description: '1 to 100 lines, each product at most once (a repeated product_id is 400).'
  })
}, { additionalProperties: false })
