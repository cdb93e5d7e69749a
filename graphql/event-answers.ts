import { print, type GraphQLResolveInfo, type OperationDefinitionNode } from 'graphql'

// The selection's printed form, once per subscription document: each event is executed afresh
// (new field node lists), but over the same parsed operation.
const printedSelections = new WeakMap<OperationDefinitionNode, string>()

/**
 * What an event's answer depends on: the subscription field, the selection below it, the fragments
 * that selection may spread and the variables (a nested `limit`). Not the caller: what a subscriber
 * may read does not depend on who it is.
 */
function selectionOf (info: GraphQLResolveInfo): string {
  let printed = printedSelections.get(info.operation)
  if (printed === undefined) {
    printed = [
      info.fieldName,
      ...info.fieldNodes.map((node) => node.selectionSet === undefined ? '' : print(node.selectionSet)),
      ...Object.values(info.fragments).map((fragment) => print(fragment))
    ].join('\n')
    printedSelections.set(info.operation, printed)
  }
  return (info.operation.variableDefinitions?.length ?? 0) === 0 ? printed : `${printed}\n${JSON.stringify(info.variableValues)}`
}

// Answers of one event by selection; an event is one object for all its subscribers on an instance,
// and its answers go when it does.
const answersOfEvents = new WeakMap<object, Map<string, Promise<unknown>>>()

/**
 * The answer to `event` for the selection `info` asks: resolved by `resolve` for the first
 * subscriber with that selection, and shared with the others, so that a thousand subscribers of
 * one query cost one resolution (its relations' SQL included), not a thousand.
 * The answer is shared: nothing may change it after `resolve`.
 */
export async function answerOnce<T> (event: object, info: GraphQLResolveInfo, resolve: () => Promise<T>): Promise<T> {
  let answers = answersOfEvents.get(event)
  if (answers === undefined) {
    answers = new Map()
    answersOfEvents.set(event, answers)
  }
  const selection = selectionOf(info)
  let answer = answers.get(selection) as Promise<T> | undefined
  if (answer === undefined) {
    answer = resolve()
    answers.set(selection, answer)
    // A failure (the database, say) is not handed to the subscribers that come next: they try again.
    answer.catch(() => { answers?.delete(selection) })
  }
  return answer
}
