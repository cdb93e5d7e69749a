import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql'

/** The column each field of a type reads; fields that need none of their own (lists of children) are absent. */
const fieldColumns = {
  User: { id: 'id', name: 'name', email: 'email', createdAt: 'created_at' },
  Post: { id: 'id', title: 'title', content: 'content', createdAt: 'created_at', updatedAt: 'updated_at', author: 'author_id' },
  Comment: { id: 'id', text: 'text', createdAt: 'created_at', author: 'author_id', post: 'post_id' }
} as const satisfies Record<string, Record<string, string>>

export type LoadedType = keyof typeof fieldColumns

function collect (info: GraphQLResolveInfo, selections: SelectionSetNode | undefined, fields: Set<string>, seen: Set<string>): void {
  for (const selection of selections?.selections ?? []) {
    if (selection.kind === Kind.FIELD) fields.add(selection.name.value)
    else if (selection.kind === Kind.INLINE_FRAGMENT) collect(info, selection.selectionSet, fields, seen)
    else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value)
      collect(info, info.fragments[selection.name.value]?.selectionSet, fields, seen)
    }
  }
}

/**
 * The columns that the field being resolved asks of its `type`: only those are read from the
 * database (a nested query that shows comments' text does not fetch their timestamps). `always`
 * are added (the id, the key rows are grouped by), and `order` is the list's column order, so
 * that the same selection always gives the same list.
 */
export function selectedColumns (info: GraphQLResolveInfo, type: LoadedType, order: readonly string[], always: readonly string[]): readonly string[] {
  // Every item of a list shares its field's nodes: the answer is worked out once per field of the document.
  const known = answered.get(info.fieldNodes)
  if (known !== undefined) return known
  const columns = columnsOf(info, type, order, always)
  answered.set(info.fieldNodes, columns)
  return columns
}

const answered = new WeakMap<GraphQLResolveInfo['fieldNodes'], readonly string[]>()

function columnsOf (info: GraphQLResolveInfo, type: LoadedType, order: readonly string[], always: readonly string[]): readonly string[] {
  const fields = new Set<string>()
  for (const node of info.fieldNodes) collect(info, node.selectionSet, fields, new Set())
  const columns = fieldColumns[type] as Record<string, string>
  const wanted = new Set(always)
  for (const field of fields) {
    const column = columns[field]
    if (column !== undefined) wanted.add(column)
  }
  return order.filter((column) => wanted.has(column))
}
