import { Kind, type FieldNode, type FragmentDefinitionNode, type SelectionSetNode } from 'graphql'
import type { PlannedType } from './planned-types.js'

export type Fragments = Readonly<Record<string, FragmentDefinitionNode>>

function collect (selections: SelectionSetNode | undefined, fragments: Fragments, fields: Map<string, FieldNode[]>, seen: Set<string>): void {
  for (const selection of selections?.selections ?? []) {
    if (selection.kind === Kind.FIELD) {
      const nodes = fields.get(selection.name.value)
      if (nodes === undefined) fields.set(selection.name.value, [selection])
      else nodes.push(selection)
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      collect(selection.selectionSet, fragments, fields, seen)
    } else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value)
      collect(fragments[selection.name.value]?.selectionSet, fragments, fields, seen)
    }
  }
}

/**
 * The fields that `nodes` select, through named and inline fragments, by field name (aliases of
 * one field together). `@skip`/`@include` are not looked at: what they leave out is only read
 * for nothing.
 */
export function selectedFields (nodes: ReadonlyArray<{ readonly selectionSet?: SelectionSetNode | undefined }>, fragments: Fragments): Map<string, FieldNode[]> {
  const fields = new Map<string, FieldNode[]>()
  const seen = new Set<string>()
  for (const node of nodes) collect(node.selectionSet, fragments, fields, seen)
  return fields
}

/**
 * The columns that `fields` (a selection of `type`) read: only those are loaded (a nested query
 * that shows comments' text does not fetch their timestamps). `always` are added (the id, the keys
 * rows are grouped and their relations found by), in the type's column order, so that the same
 * selection always gives the same list.
 */
export function selectedColumns (fields: ReadonlyMap<string, unknown>, type: PlannedType, always: readonly string[]): readonly string[] {
  const wanted = new Set(always)
  for (const field of fields.keys()) {
    const column = type.columnOf.get(field)
    if (column !== undefined) wanted.add(column)
  }
  return type.columns.filter((column) => wanted.has(column))
}
