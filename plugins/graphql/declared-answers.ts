import { valueFromASTUntyped, type FieldNode } from 'graphql'
import type { Row } from '../../db/pagination.js'
import { embedRelations, relationData, type RelationData } from '../../db/resource.js'
import { relationsNeedCaller } from '../../rules/resource.js'
import { resolveRelations } from '../../schema/relation-targets.js'
import type { Resource } from '../../schema/resource.js'
import { camelCase, targetTypeOf } from '../../schema/resource-sdl.js'
import { badRequest } from '../../schema/errors.js'
import { listLimit } from './inputs.js'
import { withRelationsBelow } from './relations.js'
import { isLoadedType, selectedFields, type Fragments } from './selection.js'
import type { Db } from '../../db/connect.js'

type Variables = Readonly<Record<string, unknown>>

/** What a query asks below rows of a declared resource: its selections, their fragments and variables. */
export interface Asked {
  nodes: readonly FieldNode[]
  fragments: Fragments
  variables: Variables
}

/**
 * Turns rows of declared resources (as REST shows them) into GraphQL answers: fields in camelCase,
 * and the relations the selection asks loaded below them — one statement per relation and level,
 * whatever the number of rows, through declared and built-in types alike (a built-in type's own
 * relations by its planner, ./relations.ts). `needsCaller` is called when a relation reaches a
 * resource that only signed-in callers may read.
 */
export function declaredAnswers (resources: readonly Resource[]) {
  const entries = new Map(resources.map((resource) => [resource.name, {
    fields: resource.columns.map((column) => [column, camelCase(column)] as const),
    relations: resolveRelations(resource, resources).map(relationData)
  }]))

  async function answer (db: Db, resource: Resource, rows: Row[], asked: Asked, needsCaller: () => Promise<unknown>): Promise<Row[]> {
    const entry = entries.get(resource.name)
    if (entry === undefined) throw new Error(`${resource.name} is not a declared resource of this application`)
    const selected = selectedFields(asked.nodes, asked.fragments)
    const wanted: RelationData[] = entry.relations.filter(({ relation }) => selected.has(relation.name))
    if (relationsNeedCaller(wanted)) await needsCaller()
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
    await embedRelations(db, rows, wanted, limits)
    await Promise.all(wanted.map(async ({ relation }) => {
      const below: Asked = { ...asked, nodes: selected.get(relation.name) ?? [] }
      const children = rows.flatMap((row) => {
        const value = row[relation.name] as Row | Row[] | null
        return Array.isArray(value) ? value : value === null ? [] : [value]
      })
      const declared = relation.target.resource
      if (declared === undefined) {
        const type = targetTypeOf(relation.target)
        if (isLoadedType(type)) await withRelationsBelow(db, type, below.nodes, below.fragments, below.variables, children)
        return
      }
      const answered = await answer(db, declared, children, below, needsCaller)
      const answerOf = new Map(children.map((child, at) => [child, answered[at] as Row]))
      for (const row of rows) {
        const value = row[relation.name] as Row | Row[] | null
        row[relation.name] = Array.isArray(value) ? value.map((child) => answerOf.get(child)) : value === null ? null : answerOf.get(value)
      }
    }))
    return rows.map((row) => {
      const shown: Row = { id: row.id }
      for (const [column, field] of entry.fields) if (column in row) shown[field] = row[column]
      for (const { relation } of wanted) shown[relation.name] = row[relation.name]
      return shown
    })
  }
  return answer
}
