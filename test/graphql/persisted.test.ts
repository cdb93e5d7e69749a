import { createHash } from 'node:crypto'
import Fastify from 'fastify'
import t from 'tap'
import { findPersistedQuery } from '../../db/persisted-queries.js'
import { serverOptions } from '../../plugins/server-options.js'
import tandem from '../../app/tandem.js'
import { build, errorCodes, TEST_SECRET, testDb, type GraphqlResponse } from '../helpers/app.js'

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

t.test('learnt documents are kept up to persistedQueryLimit, least recently used dropped first; registered ones stay', async (t) => {
  // A cache of one document, so that every lookup but the last reaches PostgreSQL.
  const app = await build(t, { graphql: { persistedQueryLimit: 3, persistedQueryCacheSize: 1 } })
  const registered = '{ registered: __typename }'
  await app.tandemGraphql.persist(registered)
  const documents = [1, 2, 3, 4, 5].map((n) => `{ learnt${n}: __typename }`)
  const learn = async (query: string) => {
    const res = await post(app, { query, extensions: persisted(sha256(query)) })
    t.equal(res.statusCode, 200)
    t.notOk(res.errors, query)
  }
  for (const query of documents.slice(0, 3)) await learn(query)
  // The first one is used again: the second is now the least recently used.
  t.same((await post(app, { extensions: persisted(sha256(documents[0] as string)) })).data, { learnt1: 'Query' })
  await learn(documents[3] as string)
  await learn(documents[4] as string)

  const rows = await app.db.selectFrom('persisted_queries').select(['query', 'learnt']).orderBy('query').execute()
  t.same(rows, [
    { query: documents[0], learnt: true },
    { query: documents[3], learnt: true },
    { query: documents[4], learnt: true },
    { query: registered, learnt: false }
  ], 'three learnt documents, the most recently used, and the registered one')
  const dropped = await post(app, { extensions: persisted(sha256(documents[1] as string)) })
  t.same(errorCodes(dropped), ['PERSISTED_QUERY_NOT_FOUND'], 'a dropped hash is unknown: the client sends its document again')
  await learn(documents[1] as string)
  t.same((await post(app, { extensions: persisted(sha256(documents[1] as string)) })).data, { learnt2: 'Query' })

  // Registering a document a client taught first keeps it for good.
  await app.tandemGraphql.persist(documents[4] as string)
  for (const n of [6, 7, 8, 9]) await learn(`{ learnt${n}: __typename }`)
  const kept = await app.db.selectFrom('persisted_queries').select('query').where('learnt', '=', false).orderBy('query').execute()
  t.same(kept.map((r) => r.query), [documents[4], registered])
  t.equal((await app.db.selectFrom('persisted_queries').select('sha256').where('learnt', '=', true).execute()).length, 3)

  await t.rejects(build(t, { graphql: { persistedQueryLimit: 0 } }), /persistedQueryLimit must be a positive integer/)
})
