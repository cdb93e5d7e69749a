// The built-in resources declared with defineResource (rules/built-in-resources.ts): their SDL files,
// and the names and paths they take from host resources.
import { readFileSync } from 'node:fs'
import type { Kysely } from 'kysely'
import t from 'tap'
import { defineResource, Type } from '../../index.js'
import { builtInSdlFiles } from '../../rules/built-in-resources.js'
import { adminToken, apiClient, body, build, graphql } from '../helpers/app.js'

t.test('schema/graphql/declared/ holds the SDL the built-in declarations give (regenerate: npm run sdl)', async (t) => {
  const files = builtInSdlFiles()
  t.same(files.map(({ file }) => file), ['User.graphql', 'Product.graphql', 'Post.graphql', 'Profile.graphql', 'Comment.graphql', 'Order.graphql'])
  for (const { file, sdl } of files) {
    t.equal(sdl, readFileSync(new URL(`../../schema/graphql/declared/${file}`, import.meta.url), 'utf8'), file)
  }
})

t.test('a host resource cannot take a built-in declared resource\'s name or path, nor another\'s', async (t) => {
  const representation = Type.Object({ id: Type.Integer(), name: Type.String() })
  const thing = { table: 'things', representation, generated: ['id'] as Array<'id'>, writable: ['name'] as Array<'name'> }
  const product = defineResource({ ...thing, name: 'product' })
  t.equal(product.name, 'product', 'declaring it is not refused: serving it is')
  await t.rejects(build(t, { resources: [product] }), /defineResource\("product"\): the name product is taken by a built-in resource/)
  await t.rejects(build(t, { resources: [defineResource({ ...thing, name: 'produce', plural: 'products' })] }), /the path \/products is taken by a built-in resource/)
  const widget = defineResource({ ...thing, name: 'widget' })
  await t.rejects(build(t, { resources: [widget, widget] }), /the name widget is taken by another declared resource/)
})

t.test('a host resource reaches a built-in declared one by a relation, in both styles', async (t) => {
  const wishes = defineResource({
    name: 'wish',
    plural: 'wishes',
    table: 'wishes',
    representation: Type.Object({ id: Type.Integer(), product_id: Type.Integer(), note: Type.String() }),
    generated: ['id'],
    writable: ['product_id', 'note'],
    relations: { product: { belongsTo: 'product', key: 'product_id' } },
    auth: { read: 'public', create: 'authenticated' }
  })
  const migrations = {
    '0001_wishes': {
      async up (db: Kysely<any>) {
        await db.schema.createTable('wishes').addColumn('id', 'serial', (col) => col.primaryKey())
          .addColumn('product_id', 'bigint', (col) => col.notNull().references('products.id'))
          .addColumn('note', 'text', (col) => col.notNull()).execute()
      }
    }
  }
  const app = await build(t, { resources: [wishes], migrations })
  const admin = await adminToken(app)
  const lamp = body<{ id: number }>(await apiClient(app, admin)('POST', '/products', { name: 'Lamp', category: 'home', price: 9.5 }))
  t.equal((await apiClient(app, admin)('POST', '/wishes', { product_id: lamp.id, note: 'for the desk' })).statusCode, 201)
  t.match(body(await apiClient(app)('GET', '/wishes?include=product')), { data: [{ note: 'for the desk', product: { id: lamp.id, name: 'Lamp', price: 9.5 } }] })
  t.same((await graphql(app, '{ wishes { note product { name stock } } }')).data, { wishes: [{ note: 'for the desk', product: { name: 'Lamp', stock: 0 } }] })
})
