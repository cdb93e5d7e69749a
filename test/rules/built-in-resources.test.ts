// The built-in resources declared with defineResource (rules/built-in-resources.ts): their SDL files,
// and the names and paths they take from host resources.
import { readFileSync } from 'node:fs'
import t from 'tap'
import { defineResource, Type } from '../../index.js'
import { builtInSdlFiles } from '../../rules/built-in-resources.js'
import { build } from '../helpers/app.js'

t.test('schema/graphql/declared/ holds the SDL the built-in declarations give (regenerate: npm run sdl)', async (t) => {
  const files = builtInSdlFiles()
  t.same(files.map(({ file }) => file), ['Product.graphql'])
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
