import { createHash } from 'node:crypto'
import Fastify from 'fastify'
import t from 'tap'
import { findPersistedQuery } from '../db/persisted-queries.js'
import { serverOptions } from '../plugins/server-options.js'
import tandem from '../plugins/tandem.js'
import { build, errorCodes, TEST_SECRET, testDb, type GraphqlResponse } from './helper.js'

const sha256 = (query: string): string => createHash('sha256').update(query, 'utf8').digest('hex')
const persisted = (hash: string) => ({ persistedQuery: { version: 1, sha256Hash: hash } })

async function post (app: Awaited<ReturnType<typeof build>>, payload: Record<string, unknown>): Promise<GraphqlResponse> {
  const res = await app.inject({ method: 'POST', url: '/graphql', payload })
  return { statusCode: res.statusCode, ...JSON.parse(res.body) }
}

t.test('automatic persisted queries: the Apollo protocol, stored in PostgreSQL', async (t) => {
  const app = await build(t)
  const query = '{ __typename hello: __typename }'
  const hash = sha256(query)

  const unknown = await post(app, { extensions: persisted(hash) })
  t.equal(unknown.statusCode, 200)
  t.match(unknown.errors, [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }])

  const registered = await post(app, { query, extensions: persisted(hash) })
  t.same(registered, { statusCode: 200, data: { __typename: 'Query', hello: 'Query' } })
  t.equal(await findPersistedQuery(app.db, hash), query, 'stored in persisted_queries')

  const byHash = await post(app, { extensions: persisted(hash) })
  t.same(byHash.data, { __typename: 'Query', hello: 'Query' })
  const byGet = await app.inject({ url: `/graphql?extensions=${encodeURIComponent(JSON.stringify(persisted(hash)))}` })
  t.same(JSON.parse(byGet.body), { data: { __typename: 'Query', hello: 'Query' } })

  const mismatch = await post(app, { query: '{ __typename }', extensions: persisted(hash) })
  t.same(errorCodes(mismatch), ['BAD_USER_INPUT'])
  const badVersion = await post(app, { extensions: { persistedQuery: { version: 2, sha256Hash: hash } } })
  t.match(badVersion.errors, [{ message: 'PersistedQueryNotSupported', extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED' } }])
  const notHex = await post(app, { extensions: persisted('x'.repeat(64)) })
  t.same(errorCodes(notHex), ['PERSISTED_QUERY_NOT_SUPPORTED'])

  // A document that fails validation is not stored.
  const invalid = '{ nope }'
  const refused = await post(app, { query: invalid, extensions: persisted(sha256(invalid)) })
  t.same(errorCodes(refused), ['GRAPHQL_VALIDATION_FAILED'])
  t.equal(await findPersistedQuery(app.db, sha256(invalid)), undefined)

  t.test('another instance over the same database knows the hash', async (t) => {
    const other = Fastify(serverOptions({ logLevel: 'silent' }))
    await other.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET })
    t.teardown(() => other.close())
    const res = await post(other, { extensions: persisted(hash) })
    t.same(res.data, { __typename: 'Query', hello: 'Query' })
  })
})

t.test('graphqlPersistedOnly runs only known documents', async (t) => {
  const app = await build(t, { graphqlPersistedOnly: true })
  const known = '{ known: __typename }'
  const hash = await app.tandemGraphql.persist(known)
  t.equal(hash, sha256(known))

  t.same((await post(app, { extensions: persisted(hash) })).data, { known: 'Query' }, 'by hash')
  t.same((await post(app, { query: known })).data, { known: 'Query' }, 'by its text')

  const other = '{ other: __typename }'
  const refused = await post(app, { query: other })
  t.equal(refused.statusCode, 200)
  t.match(refused.errors, [{ message: /only persisted queries/, extensions: { code: 'FORBIDDEN' } }])
  const notFound = await post(app, { extensions: persisted(sha256(other)) })
  t.same(errorCodes(notFound), ['PERSISTED_QUERY_NOT_FOUND'])
  const registration = await post(app, { query: other, extensions: persisted(sha256(other)) })
  t.same(errorCodes(registration), ['FORBIDDEN'], 'clients cannot register documents')
  t.equal(await findPersistedQuery(app.db, sha256(other)), undefined)
  t.equal((await app.inject({ url: '/graphiql' })).statusCode, 404, 'no GraphiQL')
})
