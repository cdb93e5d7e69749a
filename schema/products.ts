import { Type } from '@sinclair/typebox'
import { Id, Timestamp } from './common.js'
import { badRequest } from './errors.js'

/** numeric(12, 2): at most 10 digits before the point and 2 after (the decimals are checked by `checkPrice`). */
export const MAX_PRICE = 9_999_999_999.99
export const Price = Type.Number({ minimum: 0, maximum: MAX_PRICE, description: 'A non-negative amount with at most 2 decimals.' })

/** A product as both styles show it; the declaration (rules/products.ts) derives every other schema from it. */
export const Product = Type.Object({
  id: Id,
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.Union([Type.String({ maxLength: 5000 }), Type.Null()]),
  category: Type.String({ minLength: 1, maxLength: 100 }),
  price: Price,
  // A create may leave it out; a PUT must say it, so that a replace never zeroes it by accident.
  stock: Type.Integer({ minimum: 0, maximum: 2_147_483_647, default: 0 }),
  created_at: Timestamp
}, { additionalProperties: false })

const TWO_DECIMALS = /^\d+(\.\d{1,2})?$/

/**
 * `multipleOf: 0.01` cannot be trusted on binary floats (19.99 / 0.01 is 1998.9999999999998), so
 * the decimals are checked on the number's shortest string form, which is what the client sent.
 */
export function hasAtMostTwoDecimals (value: number): boolean {
  return TWO_DECIMALS.test(String(value))
}

/** Values about to be written with a `price` of more than 2 decimals → 400 on `price`. */
export function checkPrice (values: Record<string, unknown>): void {
  const { price } = values
  if (typeof price === 'number' && !hasAtMostTwoDecimals(price)) {
    throw badRequest('price must have at most 2 decimals', 'price')
  }
}
