// The catalogue (CONTRACT §2), declared with the public `defineResource`, as a host declares its own
// resources: anyone reads it, administrators write it.
import { isOrdered } from '../db/products.js'
import { conflict } from '../schema/errors.js'
import { checkPrice, Product } from '../schema/products.js'
import { defineResource } from '../schema/resource.js'

export const products = defineResource({
  name: 'product',
  table: 'products',
  representation: Product,
  generated: ['id', 'created_at'],
  // `description` may be left out (null); `stock` may be left out of a create (0), not of a PUT.
  writable: ['name', 'description', 'category', 'price', 'stock'],
  sort: ['name', 'price', 'created_at'],
  filters: {
    category: { field: 'category' },
    price_min: { field: 'price', op: '>=' },
    price_max: { field: 'price', op: '<=' },
    in_stock: { field: 'stock', op: 'positive', description: '`true`: only products with stock; `false`: only those without.' }
  },
  search: ['name', 'description'],
  auth: { read: 'public', create: 'admin', update: 'admin', delete: 'admin' },
  // The catalogue is kept in batches: re-priced or cleared out by category (an ordered product still refuses).
  bulk: { update: 'admin', delete: 'admin' },
  hooks: {
    beforeCreate ({ values }) { checkPrice(values) },
    beforeUpdate ({ values }) { checkPrice(values) },
    // The row is locked: no order can refer to it until the deletion commits or rolls back.
    async beforeDelete ({ trx, current }) {
      if (await isOrdered(trx, current.id)) throw conflict('the product is part of orders and cannot be deleted')
    }
  }
})
