import { parse, type GraphQLResolveInfo, type OperationDefinitionNode, type FieldNode } from 'graphql'
import t from 'tap'
import { answerOnce } from '../../graphql/event-answers.js'

/** What `answerOnce` reads of a resolver's info, for the one field of `query`. */
function infoOf (query: string): GraphQLResolveInfo {
  const operation = parse(query).definitions[0] as OperationDefinitionNode
  const field = operation.selectionSet.selections[0] as FieldNode
  return { fieldName: field.name.value, fieldNodes: [field], fragments: {}, operation, variableValues: {} } as unknown as GraphQLResolveInfo
}

t.test('one resolution per event and selection, shared by the subscribers that ask it', async (t) => {
  const event = {}
  let resolved = 0
  const resolve = async () => ({ n: ++resolved })
  const same = [infoOf('subscription { postCreated { id } }'), infoOf('subscription { postCreated { id } }')]
  const [a, b] = await Promise.all(same.map(async (info) => answerOnce(event, info, resolve)))
  t.equal(resolved, 1)
  t.equal(a, b)
  await answerOnce(event, infoOf('subscription { postCreated { title } }'), resolve)
  t.equal(resolved, 2, 'another selection resolves on its own')
  await answerOnce({}, same[0] as GraphQLResolveInfo, resolve)
  t.equal(resolved, 3, 'and so does another event')
})

t.test('regression: a failed resolution is not handed to the subscribers that come next', async (t) => {
  const event = {}
  const info = infoOf('subscription { postCreated { id } }')
  await t.rejects(answerOnce(event, info, async () => { throw new Error('database unavailable') }), /database unavailable/)
  t.same(await answerOnce(event, info, async () => ({ ok: true })), { ok: true })
})
