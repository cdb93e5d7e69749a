import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { createProduct, deleteProduct, findProduct, listProducts, updateProduct } from '../db/products.js'
import { requireAuth } from '../plugins/auth.js'
import { IdParams, ItemQuery, NoContent, WriteQuery, errors } from '../schema/common.js'
import { CreateProductBody, PatchProductBody, Product, ProductFields, ProductList, ProductListQuery, ReplaceProductBody, checkPrice } from '../schema/products.js'
import { etagOf, ifMatch, sendEntity } from './conditional.js'
import { found, sendList } from './reply.js'

const tags = ['products']

/** The catalogue: anyone reads it, administrators write it. */
const productsRoutes: FastifyPluginAsync = async (fastify) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()
  const secret = () => app.tandemConfig.jwtSecret

  app.get('/products', {
    schema: { tags, summary: 'List products', querystring: ProductListQuery, response: { 200: ProductList, ...errors(400, 422, 429) } }
  }, async (request, reply) => sendList(request, reply, await listProducts(app.db, request.query, { secret: secret() })))

  app.get('/products/:id', {
    schema: { tags, summary: 'Get a product', params: IdParams, querystring: ItemQuery, response: { 200: ProductFields, ...errors(400, 404, 429) } }
  }, async (request, reply) => {
    const { fields, include } = request.query
    return sendEntity(request, reply, found(await findProduct(app.db, request.params.id, fields, include), 'product'))
  })

  app.post('/products', {
    config: { auth: 'admin', transaction: true },
    preHandler: checkPrice,
    schema: { tags, summary: 'Add a product', querystring: WriteQuery, body: CreateProductBody, response: { 201: Product, ...errors(400, 401, 403, 409, 413, 415, 422, 429) } }
  }, async (request, reply) => {
    const product = await createProduct(request.db, request.body)
    return reply.code(201)
      .header('location', `${request.url.split('?')[0]}/${product.id}`)
      .header('etag', etagOf(product))
      .send(product)
  })

  app.put('/products/:id', {
    config: { auth: 'admin' },
    preHandler: checkPrice,
    schema: { tags, summary: 'Replace a product (If-Match honoured)', params: IdParams, querystring: WriteQuery, body: ReplaceProductBody, response: { 200: Product, ...errors(400, 401, 403, 404, 412, 413, 415, 422, 429) } }
  }, async (request, reply) => {
    const changes = { ...request.body, description: request.body.description ?? null }
    const product = found(await updateProduct(app.db, request.params.id, changes, ifMatch(request)), 'product')
    return reply.header('etag', etagOf(product)).send(product)
  })

  app.patch('/products/:id', {
    config: { auth: 'admin' },
    preHandler: checkPrice,
    schema: { tags, summary: 'Change some fields of a product (If-Match honoured)', params: IdParams, querystring: WriteQuery, body: PatchProductBody, response: { 200: Product, ...errors(400, 401, 403, 404, 412, 413, 415, 422, 429) } }
  }, async (request, reply) => {
    const product = found(await updateProduct(app.db, request.params.id, request.body, ifMatch(request)), 'product')
    return reply.header('etag', etagOf(product)).send(product)
  })

  app.delete('/products/:id', {
    config: { auth: 'admin' },
    schema: { tags, summary: 'Delete a product that no order refers to (If-Match honoured)', params: IdParams, querystring: WriteQuery, response: { 204: NoContent, ...errors(400, 401, 403, 404, 409, 412, 429) } }
  }, async (request, reply) => {
    if (!await deleteProduct(app.db, request.params.id, ifMatch(request))) throw found(undefined, 'product')
    return reply.code(204).send(null)
  })
}

export default productsRoutes
