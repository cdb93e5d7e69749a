import { Type, type Static } from '@sinclair/typebox'
import { Id, ListOf, ListQuery, Selectable, StringEnum, Timestamp } from './common.js'
import { User } from './users.js'

export const orderStatuses = ['pending', 'paid', 'shipped', 'cancelled'] as const
const Status = StringEnum(orderStatuses)
const Amount = Type.Number({ minimum: 0 })
const Quantity = Type.Integer({ minimum: 1, maximum: 10_000 })

export const OrderItem = Type.Object({
  product_id: Id,
  quantity: Quantity,
  unit_price: Type.Number({ minimum: 0, description: 'The product\'s price when the order was placed.' })
}, { additionalProperties: false })

export const Order = Type.Object({
  id: Id,
  user_id: Id,
  status: Status,
  items: Type.Array(OrderItem),
  total: Amount,
  created_at: Timestamp
}, { additionalProperties: false })

/** An order as lists, `fields=` and `include=user` return it. */
export const OrderFields = Selectable({
  user_id: Id,
  status: Status,
  items: Type.Array(OrderItem),
  total: Amount,
  created_at: Timestamp,
  user: User
})

export const CreateOrderBody = Type.Object({
  items: Type.Array(Type.Object({
    product_id: Id,
    quantity: Quantity
  }, { additionalProperties: false }), {
    minItems: 1,
    maxItems: 100,
    description: '1 to 100 lines, each product at most once (a repeated product_id is 400).'
  })
}, { additionalProperties: false })
export type CreateOrderBodyType = Static<typeof CreateOrderBody>

export const orderSortable = ['id', 'created_at', 'total'] as const
export const orderIncludable = ['user'] as const

export const OrderListQuery = ListQuery(orderSortable, {
  status: Type.Optional(Status)
})
export type OrderListQueryType = Static<typeof OrderListQuery>

export const OrderList = ListOf(OrderFields)
