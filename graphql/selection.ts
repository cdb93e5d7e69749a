import { Kind, type FieldNode, type FragmentDefinitionNode, type SelectionSetNode } from 'graphql'
import { comments } from '../rules/comments.js'
import { posts } from '../rules/posts.js'
import { camelCase } from '../schema/resource-sdl.js'

/**
 * The one map of GraphQL names to database columns for each type's scalar fields (`createdAt` →
 * `created_at`). Relation fields are in ./relations.ts, with the column each loads by. `Post` and
 * `Comment` are declared (rules/posts.ts, rules/comments.ts): their fields are their declarations'
 * columns, as their SDL names them.
 */
const columnMap: Readonly<Record<'User' | 'Post' | 'Comment', Readonly<Record<string, string>>>> = {
  User: { id: 'id', name: 'name', email: 'email', createdAt: 'created_at' },
  Post: Object.fromEntries(posts.columns.map((column) => [camelCase(column), column])),
  Comment: Object.fromEntries(comments.columns.map((column) => [camelCase(column), column]))
}

export type LoadedType = keyof typeof columnMap

export const isLoadedType = (name: string): name is LoadedType => Object.hasOwn(columnMap, name)

export type Fragments = Readonly<Record<string, FragmentDefinitionNode>>

/** The scalar fields whose column is named otherwise (`createdAt` reads `created_at`), as [field, column]. */
export function renamedColumns (type: LoadedType): ReadonlyArray<readonly [string, string]> {
  return Object.entries(columnMap[type]).filter(([field, column]) => field !== column)
}

/** Each scalar field's column of `type`, as column → field. */
export function fieldsByColumn (type: LoadedType): ReadonlyMap<string, string> {
  return new Map(Object.entries(columnMap[type]).map(([field, column]) => [column, field]))
}

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
 * rows are grouped and their relations found by), and `order` is the list's column order, so that
 * the same selection always gives the same list.
 */
export function selectedColumns (fields: ReadonlyMap<string, unknown>, type: LoadedType, order: readonly string[], always: readonly string[]): readonly string[] {
  const columns = columnMap[type]
  const wanted = new Set(always)
  for (const field of fields.keys()) {
    const column = columns[field]
    if (column !== undefined) wanted.add(column)
  }
  return order.filter((column) => wanted.has(column))
}
