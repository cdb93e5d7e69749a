import { Type, type Static } from '@sinclair/typebox'
import { Id, ListOf, ListQuery, Selectable, Timestamp } from './common.js'
import { badRequest } from './errors.js'

const Name = Type.String({ minLength: 1, maxLength: 200 })
const Description = Type.Union([Type.String({ maxLength: 5000 }), Type.Null()])
const Category = Type.String({ minLength: 1, maxLength: 100 })
/** numeric(12, 2): at most 10 digits before the point and 2 after (the decimals are checked by `checkPrice`). */
export const MAX_PRICE = 9_999_999_999.99
export const Price = Type.Number({ minimum: 0, maximum: MAX_PRICE, description: 'A non-negative amount with at most 2 decimals.' })
const Stock = Type.Integer({ minimum: 0, maximum: 2_147_483_647 })

export const Product = Type.Object({
  id: Id,
  name: Name,
  description: Description,
  category: Category,
  price: Price,
  stock: Stock,
  created_at: Timestamp
}, { additionalProperties: false })

export const ProductFields = Selectable({ name: Name, description: Description, category: Category, price: Price, stock: Stock, created_at: Timestamp })

export const CreateProductBody = Type.Object({
  name: Name,
  description: Type.Optional(Description),
  category: Category,
  price: Price,
  stock: Type.Optional(Type.Integer({ minimum: 0, maximum: 2_147_483_647, default: 0, description: 'Default 0.' }))
}, { additionalProperties: false })
export type CreateProductBodyType = Static<typeof CreateProductBody>

/** PUT replaces: `description` left out becomes null; `stock` must be said, so that a replace never zeroes it by accident. */
export const ReplaceProductBody = Type.Object({
  name: Name,
  description: Type.Optional(Description),
  category: Category,
  price: Price,
  stock: Stock
}, { additionalProperties: false })
export type ReplaceProductBodyType = Static<typeof ReplaceProductBody>

export const PatchProductBody = Type.Partial(ReplaceProductBody, { additionalProperties: false })
export type PatchProductBodyType = Static<typeof PatchProductBody>

const TWO_DECIMALS = /^\d+(\.\d{1,2})?$/

/**
 * `multipleOf: 0.01` cannot be trusted on binary floats (19.99 / 0.01 is 1998.9999999999998), so
 * the decimals are checked on the number's shortest string form, which is what the client sent.
 */
export function hasAtMostTwoDecimals (value: number): boolean {
  return TWO_DECIMALS.test(String(value))
}

/** A `preHandler` for bodies with a `price`: more than 2 decimals → 400 on `price`. */
export async function checkPrice (request: { body: unknown }): Promise<void> {
  const price = (request.body as { price?: unknown } | null)?.price
  if (typeof price === 'number' && !hasAtMostTwoDecimals(price)) {
    throw badRequest('price must have at most 2 decimals', 'price')
  }
}

export const productSortable = ['id', 'name', 'price', 'created_at'] as const

export const ProductListQuery = ListQuery(productSortable, {
  category: Type.Optional(Category),
  price_min: Type.Optional(Type.Number({ minimum: 0, description: 'Lowest price, inclusive.' })),
  price_max: Type.Optional(Type.Number({ minimum: 0, description: 'Highest price, inclusive.' })),
  in_stock: Type.Optional(Type.Boolean({ description: '`true`: only products with stock; `false`: only those without.' }))
})
export type ProductListQueryType = Static<typeof ProductListQuery>

export const ProductList = ListOf(ProductFields)
