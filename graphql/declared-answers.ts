import type { FieldNode } from 'graphql'
import type { Db } from '../db/connect.js'
import type { Row } from '../db/pagination.js'
import type { Resource } from '../schema/resource.js'
import type { Caller, RelationPlanner } from './relations.js'
import type { Fragments } from './selection.js'

export type { Caller } from './relations.js'

type Variables = Readonly<Record<string, unknown>>

/** What a query asks below rows of a declared resource: its selections, their fragments and variables. */
export interface Asked {
  nodes: readonly FieldNode[]
  fragments: Fragments
  variables: Variables
}

const capitalized = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1)

/**
 * Turns rows of declared resources (as REST shows them) into GraphQL answers: fields in camelCase
 * (beside their columns), and the relations the selection asks loaded below them by the one relation
 * engine (`planner`, ./relations.ts) — every relation below a level in one statement, each narrowed by
 * its target's read rule, for built-in and host types alike. The rows are answered in place.
 */
export function declaredAnswers (planner: RelationPlanner) {
  async function answer (db: Db, resource: Resource, rows: Row[], asked: Asked, caller: Caller): Promise<Row[]> {
    await planner.withRelationsBelow(db, capitalized(resource.name), asked.nodes, asked.fragments, asked.variables, rows, caller)
    return rows
  }
  return { answer }
}
