import { sql, type RawBuilder } from 'kysely'
import { conflict, unprocessable } from '../schema/errors.js'
import type { Db } from './connect.js'
import { lockedWrite, type Precondition } from './locked-write.js'
import { paginate, parseFields, selectColumns, type ListContext, type ListPage, type ListParams, type ListSpec } from './pagination.js'
import { parseInclude } from './relations.js'
import { matches, searchFilter } from './search.js'
import type { ProductsTable } from './types.js'

export interface Product {
  id: number
  name: string
  description: string | null
  category: string
  price: number
  stock: number
  created_at: Date
}
export type ProductSelection = Partial<Product> & Pick<Product, 'id'>

const representation = ['id', 'name', 'description', 'category', 'price', 'stock', 'created_at'] as const

// The expression `products_search_idx` was built on.
const productSearchText = sql<string>`(name || ' ' || coalesce(description, ''))`

export const productList: ListSpec<'products'> = {
  table: 'products',
  columns: representation,
  sortable: { id: {}, name: {}, price: {}, created_at: {} },
  filters: {
    category: { where: (query, category) => query.where('category', '=', category) },
    price_min: { where: (query, min) => query.where('price', '>=', min) },
    price_max: { where: (query, max) => query.where('price', '<=', max) },
    in_stock: { where: (query, inStock) => query.where(sql<boolean>`(stock > 0) = ${inStock}`) },
    q: searchFilter(productSearchText)
  }
}

export interface ProductFilters {
  category?: string | undefined
  price_min?: number | undefined
  price_max?: number | undefined
  in_stock?: boolean | undefined
  q?: string | undefined
  include?: string | undefined
}

/** `q` on exactly the expression `products_search_idx` was built on, so the trigram index serves it. */
export function productMatches (q: string): RawBuilder<boolean> {
  return matches(productSearchText, q)
}

export async function listProducts (db: Db, params: ListParams & ProductFilters, context: Omit<ListContext, 'filters'>): Promise<ListPage> {
  parseInclude([], params.include)
  const { category, price_min: min, price_max: max, in_stock: inStock, q } = params
  if (min !== undefined && max !== undefined && min > max) throw unprocessable('price_min must not be above price_max', 'price_min')
  return await paginate(db, productList, params, { ...context, filters: { category, price_min: min, price_max: max, in_stock: inStock, q } })
}

export async function findProduct (db: Db, id: number, fields?: string, include?: string): Promise<ProductSelection | undefined> {
  parseInclude([], include)
  const query = selectColumns(db.selectFrom('products').where('id', '=', id), productList, parseFields(productList, fields))
  return await query.executeTakeFirst() as ProductSelection | undefined
}

export interface NewProduct {
  name: string
  description?: string | null | undefined
  category: string
  price: number
  stock?: number | undefined
}

export async function createProduct (db: Db, input: NewProduct): Promise<Product> {
  return db.insertInto('products')
    .values({ ...input, description: input.description ?? null, stock: input.stock ?? 0 })
    .returning(representation)
    .executeTakeFirstOrThrow()
}

export type ProductChanges = Partial<Omit<ProductsTable, 'id' | 'created_at'>>

/**
 * Applies `changes` (every field for PUT, the ones sent for PATCH); undefined when there is no
 * such product. With a `check`, the row is locked and checked first, in the same transaction.
 */
export async function updateProduct (db: Db, id: number, changes: ProductChanges, check?: Precondition<Product>): Promise<Product | undefined> {
  const values = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined))
  if (check === undefined && Object.keys(values).length > 0) {
    return db.updateTable('products').set(values).where('id', '=', id).returning(representation).executeTakeFirst()
  }
  return lockedWrite(db, lock(id), check, async (trx, current) => Object.keys(values).length === 0
    ? current
    : trx.updateTable('products').set(values).where('id', '=', id).returning(representation).executeTakeFirst())
}

const lock = (id: number) => (trx: Db) => trx.selectFrom('products').select(representation).where('id', '=', id).forUpdate().executeTakeFirst()

const referencedByOrders = () => conflict('the product is part of orders and cannot be deleted')

/** False when there is no such product; 409 when orders refer to it (the foreign key restricts). */
export async function deleteProduct (db: Db, id: number, check?: Precondition<Product>): Promise<boolean> {
  const remove = async (trx: Db): Promise<boolean> => {
    const result = await trx.deleteFrom('products').where('id', '=', id).executeTakeFirst()
    return result.numDeletedRows > 0n
  }
  try {
    return check === undefined ? await remove(db) : (await lockedWrite(db, lock(id), check, remove)) ?? false
  } catch (error) {
    // order_items.product_id ON DELETE RESTRICT: orders still refer to the product. That is a
    // conflict with the resource's state, not a missing reference in the input (the generic 23503 → 422).
    if ((error as { code?: unknown }).code === '23503') throw referencedByOrders()
    throw error
  }
}
