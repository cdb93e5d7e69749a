import { valueFromASTUntyped, type FieldNode } from 'graphql'
import type { Row } from '../db/pagination.js'
import { relationData, type RelationData } from '../db/resource.js'
import { loadRelated } from '../rules/relations.js'
import { relationsNeedCaller } from '../rules/resource.js'
import { builtInTargetNames, inverseRelations, servedRelations } from '../schema/relation-targets.js'
import type { Resource } from '../schema/resource.js'
import { camelCase, targetTypeOf } from '../schema/resource-sdl.js'
import { badRequest } from '../schema/errors.js'
import type { AccessUser } from '../plugins/auth.js'
import { listLimit } from './inputs.js'
import { withRelationsBelow, type AddedFields } from './relations.js'
import { isLoadedType, selectedFields, type Fragments } from './selection.js'
import type { Db } from '../db/connect.js'

type Variables = Readonly<Record<string, unknown>>

/** What a query asks below rows of a declared resource: its selections, their fragments and variables. */
export interface Asked {
  nodes: readonly FieldNode[]
  fragments: Fragments
  variables: Variables
}

/**
 * Who asks, for relations whose targets only signed-in callers may read: called only when such a
 * relation is asked (it throws UNAUTHENTICATED without a caller). Undefined (a subscription's shared
 * answer) shows nothing of targets read by their owners only.
 */
export type Caller = () => Promise<AccessUser | undefined>

const capitalized = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1)

/** A loaded field's value as GraphQL shows it: the keys of its objects in camelCase, at every depth. */
function camelCased (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelCased)
  if (value === null || typeof value !== 'object' || value instanceof Date) return value
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [camelCase(key), camelCased(inner)]))
}

/**
 * Turns rows of declared resources (as REST shows them) into GraphQL answers: fields in camelCase,
 * and the relations the selection asks loaded below them — one statement per relation and level,
 * whatever the number of rows, through declared and built-in types alike (a built-in type's own
 * relations by its planner, ./relations.ts, which also answers the built-in declared posts). `added`
 * are the fields declared resources add to the planner's types through `inverse` (`Post.labels`),
 * for that planner to load the same way.
 */
export function declaredAnswers (resources: readonly Resource[]) {
  const entries = new Map(resources.map((resource) => [resource.name, {
    fields: resource.columns.map((column) => [column, camelCase(column)] as const),
    loaded: resource.loaded.map((field) => [field, camelCase(field)] as const),
    relations: servedRelations(resource, resources).map(relationData)
  }]))
  // The built-in types' added relations, by GraphQL type and field.
  const addedRelations = new Map(builtInTargetNames.map((name) => [capitalized(name), new Map(inverseRelations(name, resources).map((relation) => [relation.name, relationData(relation)]))]))
  for (const [type, fields] of addedRelations) if (fields.size === 0) addedRelations.delete(type)

  /** Adds `wanted` (relations of `rows`) as `selected` (their field nodes, by name) asks them, with what they select below them. */
  async function withRelations (db: Db, rows: Row[], wanted: readonly RelationData[], selected: ReadonlyMap<string, readonly FieldNode[]>, asked: Asked, caller: Caller): Promise<void> {
    const viewer = relationsNeedCaller(wanted) ? await caller() : undefined
    const limits = new Map<string, number>()
    for (const { relation } of wanted) {
      if (!relation.list) continue
      // One list per row and relation: aliases of the relation must ask the same `limit`.
      const asks = new Set((selected.get(relation.name) ?? []).map((node) => {
        const limit = (node.arguments ?? []).find((argument) => argument.name.value === 'limit')
        return listLimit(limit === undefined ? undefined : valueFromASTUntyped(limit.value, asked.variables))
      }))
      if (asks.size > 1) throw badRequest(`${relation.name} is asked with different limits; ask it with one`, 'limit')
      limits.set(relation.name, [...asks][0] as number)
    }
    await loadRelated(db, rows, wanted, viewer, { limits, show: false })
    await Promise.all(wanted.map(async ({ relation }) => {
      const below: Asked = { ...asked, nodes: selected.get(relation.name) ?? [] }
      const children = rows.flatMap((row) => {
        const value = row[relation.name] as Row | Row[] | null
        return Array.isArray(value) ? value : value === null ? [] : [value]
      })
      const declared = relation.target.resource
      if (declared === undefined) {
        const type = targetTypeOf(relation.target)
        if (isLoadedType(type)) await withRelationsBelow(db, type, below.nodes, below.fragments, below.variables, children, { fields: added, caller })
        return
      }
      const answered = await answer(db, declared, children, below, caller)
      const answerOf = new Map(children.map((child, at) => [child, answered[at] as Row]))
      for (const row of rows) {
        const value = row[relation.name] as Row | Row[] | null
        row[relation.name] = Array.isArray(value) ? value.map((child) => answerOf.get(child)) : value === null ? null : answerOf.get(value)
      }
    }))
  }

  async function answer (db: Db, resource: Resource, rows: Row[], asked: Asked, caller: Caller): Promise<Row[]> {
    const entry = entries.get(resource.name)
    if (entry === undefined) throw new Error(`${resource.name} is not a declared resource of this application`)
    // A declared type of the built-in planner (Post) loads what is selected below it as the built-in
    // types do: every relation below a level in one statement. Its rows are answered in place.
    const type = capitalized(resource.name)
    if (isLoadedType(type)) {
      await withRelationsBelow(db, type, asked.nodes, asked.fragments, asked.variables, rows, { fields: added, caller })
      return rows
    }
    const selected = selectedFields(asked.nodes, asked.fragments)
    const wanted: RelationData[] = entry.relations.filter(({ relation }) => selected.has(relation.name))
    await withRelations(db, rows, wanted, selected, asked, caller)
    return rows.map((row) => {
      // The key is among `entry.fields`: only `id` is put first.
      const shown = (resource.key === 'id' ? { id: row.id } : {}) as Row
      for (const [column, field] of entry.fields) if (column in row) shown[field] = row[column]
      for (const [column, field] of entry.loaded) if (column in row) shown[field] = camelCased(row[column])
      for (const { relation } of wanted) shown[relation.name] = row[relation.name]
      return shown
    })
  }

  const added: AddedFields = {
    keys: new Map([...addedRelations].map(([type, fields]) => [type, new Map([...fields].map(([field, { relation }]) => [field, relation.kind === 'belongsTo' ? relation.key : 'id']))])),
    async load (db, type, rows, field, asked, caller) {
      const data = addedRelations.get(type)?.get(field)
      if (data === undefined) return
      // The rows of a built-in type keep their answer's shape; only the added field is set on them.
      await withRelations(db, rows as Row[], [data], new Map([[field, asked.nodes]]), asked, caller)
    }
  }

  return { answer, added }
}
