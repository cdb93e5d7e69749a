import { Kind, type GraphQLResolveInfo, type SelectionSetNode } from 'graphql'

/**
 * The one map of GraphQL names to database columns: each scalar field's column (`createdAt` →
 * `created_at`), and the key column each relation field loads by. Lists of children need no
 * column of their own and are absent.
 */
const columnMap = {
  User: { fields: { id: 'id', name: 'name', email: 'email', createdAt: 'created_at' }, keys: {} },
  Post: { fields: { id: 'id', title: 'title', content: 'content', createdAt: 'created_at', updatedAt: 'updated_at' }, keys: { author: 'author_id' } },
  Comment: { fields: { id: 'id', text: 'text', createdAt: 'created_at' }, keys: { author: 'author_id', post: 'post_id' } }
} as const satisfies Record<string, { fields: Record<string, string>, keys: Record<string, string> }>

export type LoadedType = keyof typeof columnMap

type Renamed = Record<string, (row: Record<string, unknown>) => unknown>

/** Resolvers for the scalar fields whose column is named otherwise (`createdAt` reads `created_at`). */
export function renamedFields (type: LoadedType): Renamed {
  const resolvers: Renamed = {}
  for (const [field, column] of Object.entries(columnMap[type].fields)) {
    if (field !== column) resolvers[field] = (row) => row[column]
  }
  return resolvers
}

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
  const columns: Record<string, string> = { ...columnMap[type].fields, ...columnMap[type].keys }
  const wanted = new Set(always)
  for (const field of fields) {
    const column = columns[field]
    if (column !== undefined) wanted.add(column)
  }
  return order.filter((column) => wanted.has(column))
}
