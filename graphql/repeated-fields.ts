import { Kind, type DocumentNode, type FragmentDefinitionNode, type GraphQLError, type SelectionSetNode } from 'graphql'
import { clientError, codes } from './errors.js'

/**
 * How often one response key may be selected in one selection set, counting what inline fragments
 * and fragment spreads put there. graphql-js checks that repeated selections can be merged by
 * comparing them pairwise, so a document repeating one field a thousand times costs far more to
 * validate than to send; a real client writes a key once, or a few times through fragments.
 */
export const MAX_REPEATED_KEY = 10

/**
 * The refusal of a document that repeats a response key more than `MAX_REPEATED_KEY` times in one
 * selection set, or undefined. A walk over the syntax tree: no schema, run before validation.
 */
export function repeatedFields (document: DocumentNode): GraphQLError | undefined {
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition)
  }
  // The keys one selection set selects, through its inline fragments and spreads (each fragment once per path).
  const keysOf = (set: SelectionSetNode, counts: Map<string, number>, visiting: Set<string>): void => {
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value
        counts.set(key, (counts.get(key) ?? 0) + 1)
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        keysOf(selection.selectionSet, counts, visiting)
      } else {
        const name = selection.name.value
        const fragment = fragments.get(name)
        if (fragment === undefined || visiting.has(name)) continue
        visiting.add(name)
        keysOf(fragment.selectionSet, counts, visiting)
        visiting.delete(name)
      }
    }
  }
  const sets: SelectionSetNode[] = []
  for (const definition of document.definitions) {
    if (definition.kind === Kind.OPERATION_DEFINITION || definition.kind === Kind.FRAGMENT_DEFINITION) sets.push(definition.selectionSet)
  }
  for (let set = sets.pop(); set !== undefined; set = sets.pop()) {
    const counts = new Map<string, number>()
    keysOf(set, counts, new Set())
    for (const [key, count] of counts) {
      if (count > MAX_REPEATED_KEY) {
        return clientError(`"${key}" is selected ${count} times in one selection set; at most ${MAX_REPEATED_KEY}`, codes.validationFailed, { field: key })
      }
    }
    for (const selection of set.selections) {
      if (selection.kind !== Kind.FRAGMENT_SPREAD && selection.selectionSet !== undefined) sets.push(selection.selectionSet)
    }
  }
  return undefined
}
