// The products' declaration (rules/products.ts) in the query style: what REST serves
// (test/routes/products.test.ts), GraphQL serves from the same declaration and rules.
import t from 'tap'
import { adminToken, apiClient, body, build, errorCodes, graphql, signedIn } from '../helpers/app.js'

const fields = 'id name description category price stock createdAt'

t.test('products in GraphQL: anyone reads, filters as REST does, administrators write under the same rules', async (t) => {
  const app = await build(t)
  const admin = await adminToken(app)
  const create = (input: string, headers?: Record<string, string>) =>
    graphql(app, `mutation { createProduct(input: { ${input} }) { ${fields} } }`, headers === undefined ? {} : { headers })

  const made = await create('name: "Desk lamp", category: "home", price: 19.99, stock: 5', admin)
  t.match(made.data?.createProduct, { id: String, name: 'Desk lamp', description: null, price: 19.99, stock: 5 })
  const pen = await create('name: "Pen", category: "office", price: 2', admin)
  t.match(pen.data?.createProduct, { stock: 0, description: null }, 'stock defaults to 0 and description to null, as in REST')
  const penId = pen.data?.createProduct.id as string

  t.same(errorCodes(await create('name: "x", category: "x", price: 1')), ['UNAUTHENTICATED'])
  t.same(errorCodes(await create('name: "x", category: "x", price: 1', (await signedIn(app)).headers)), ['FORBIDDEN'])
  const decimals = await create('name: "x", category: "x", price: 1.005', admin)
  t.match(decimals.errors, [{ extensions: { code: 'BAD_USER_INPUT', field: 'price' } }], 'a price of 3 decimals is refused on price')

  const names = async (args: string) => {
    const { data, errors } = await graphql(app, `{ products(${args}) { name } }`)
    t.equal(errors, undefined, args)
    return (data?.products as Array<{ name: string }>).map(({ name }) => name)
  }
  t.same(await names('priceMin: 2, priceMax: 19.99'), ['Desk lamp', 'Pen'], 'bounds are inclusive')
  t.same(await names('priceMin: 2.01'), ['Desk lamp'])
  t.same(await names('inStock: false'), ['Pen'])
  t.same(await names('inStock: true, category: "home"'), ['Desk lamp'])
  t.same(await names('q: "lamp"'), ['Desk lamp'])
  const inverted = await graphql(app, '{ products(priceMin: 50, priceMax: 10) { name } }')
  t.match(inverted.errors, [{ extensions: { field: 'price_min' } }], 'a lower bound above the upper one is refused, as in REST')
  const page = await graphql(app, '{ productsConnection(first: 1, inStock: true) { edges { node { name } } pageInfo { hasNextPage } } }')
  t.same(page.data, { productsConnection: { edges: [{ node: { name: 'Desk lamp' } }], pageInfo: { hasNextPage: false } } })
  t.match((await graphql(app, `{ product(id: "${penId}") { name price } }`)).data, { product: { name: 'Pen', price: 2 } })

  const changed = await graphql(app, `mutation { updateProduct(id: "${penId}", input: { price: 2.5 }) { price stock } }`, { headers: admin })
  t.same(changed.data, { updateProduct: { price: 2.5, stock: 0 } }, 'an update leaves out what it does not name (no default applied)')
  const rest = body(await apiClient(app)('GET', `/products/${penId}`))
  t.match(rest, { price: 2.5, stock: 0 }, 'REST reads what GraphQL wrote')

  const lampId = made.data?.createProduct.id as string
  const buyer = await signedIn(app)
  t.equal((await apiClient(app, buyer.headers)('POST', '/orders', { items: [{ product_id: Number(lampId), quantity: 1 }] })).statusCode, 201)
  const ordered = await graphql(app, `mutation { deleteProduct(id: "${lampId}") }`, { headers: admin })
  t.match(ordered.errors, [{ extensions: { code: 'CONFLICT' }, message: /orders/ }], 'a product that orders refer to stays')
  t.match((await graphql(app, `{ product(id: "${lampId}") { stock } }`)).data, { product: { stock: 4 } })
  t.same((await graphql(app, `mutation { deleteProduct(id: "${penId}") }`, { headers: admin })).data, { deleteProduct: true })
  t.same((await graphql(app, `{ product(id: "${penId}") { id } }`)).data, { product: null })
})
