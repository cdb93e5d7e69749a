import { Kind, parse, print, visit, type DirectiveNode, type FieldNode, type OperationDefinitionNode } from 'graphql'

const [include] = ((parse('{ a @include(if: true) }').definitions[0] as OperationDefinitionNode).selectionSet.selections[0] as FieldNode).directives as DirectiveNode[]

/**
 * `query` with `@include(if: true)` on each root field: the same question, which GraphQL executes
 * itself, since the database alone answers no query whose fields carry a directive
 * (graphql/compiled.ts). Tests compare the two answers, and count the statements of each.
 */
export function executedByGraphql (query: string): string {
  return print(visit(parse(query), {
    OperationDefinition: (operation) => ({
      ...operation,
      selectionSet: {
        ...operation.selectionSet,
        selections: operation.selectionSet.selections.map((selection) => selection.kind === Kind.FIELD ? { ...selection, directives: [...selection.directives ?? [], include as DirectiveNode] } : selection)
      }
    })
  }))
}
