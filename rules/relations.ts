// The rules of relations as REST's `include=` reads them (a relation's nested list is its target's own
// list, rules/served-resource.ts; GraphQL's engine applies the same read rules in its statement,
// graphql/relations.ts): each target's read rule narrows its rows to the caller's own when it is an
// owner rule, and its field rules show them as the caller may see them.
import type { Db } from '../db/connect.js'
import type { Row } from '../db/pagination.js'
import { embedRelations, type RelationData } from '../db/resource.js'
import type { AccessUser } from '../plugins/auth.js'
import { shownRow, shownRows } from './field-rules.js'
import { relationOwners } from './resource.js'

/**
 * Adds `relations` to `rows` for `caller`: one statement per relation, whatever the number of rows,
 * each narrowed by its target's read rule and shown by its field rules. Each row needs the columns
 * its relations are found by (`id`, a belongsTo's key).
 */
export async function loadRelated (db: Db, rows: Row[], relations: readonly RelationData[], caller: AccessUser | undefined): Promise<void> {
  await embedRelations(db, rows, relations, undefined, relationOwners(relations, caller))
  for (const { relation } of relations) {
    const rules = relation.target.fieldRules
    if (rules === undefined) continue
    for (const row of rows) {
      const embedded = row[relation.name] as Row | Row[] | null | undefined
      if (embedded === null || embedded === undefined) continue
      row[relation.name] = Array.isArray(embedded) ? shownRows(rules, caller, embedded) : shownRow(rules, caller, embedded)
    }
  }
}
