// The products' statements beyond those their declaration gives (rules/products.ts, db/resource.ts).
import type { RawBuilder } from 'kysely'
import type { Db } from './connect.js'
import { matches, searchedText } from './search.js'

export interface Product {
  id: number
  name: string
  description: string | null
  category: string
  price: number
  stock: number
  created_at: Date
}

const representation = ['id', 'name', 'description', 'category', 'price', 'stock', 'created_at'] as const

/** `q` on exactly the expression the declaration searches and `products_search_idx` was built on, so the trigram index serves it. */
export function productMatches (q: string): RawBuilder<boolean> {
  return matches(searchedText(['name', 'description']), q)
}

export interface NewProduct {
  name: string
  description?: string | null | undefined
  category: string
  price: number
  stock?: number | undefined
}

/** Adds a product with no rule applied (seeds and benchmarks; the API's creates go through the declaration). */
export async function createProduct (db: Db, input: NewProduct): Promise<Product> {
  return db.insertInto('products')
    .values({ ...input, description: input.description ?? null, stock: input.stock ?? 0 })
    .returning(representation)
    .executeTakeFirstOrThrow()
}

/** Whether an order refers to the product (`order_items.product_id` restricts its deletion). */
export async function isOrdered (db: Db, id: number): Promise<boolean> {
  const line = await db.selectFrom('order_items').select('order_id').where('product_id', '=', id).limit(1).executeTakeFirst()
  return line !== undefined
}
