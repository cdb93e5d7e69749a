// The rules of relations as REST reads them (`include=` and nested lists; GraphQL's engine applies
// the same read rules in its statement, graphql/relations.ts): each target's read rule narrows its
// rows to the caller's own when it is an owner rule, and its field rules show them as the caller may see them.
import type { FastifyInstance } from 'fastify'
import type { Key } from '../schema/keys.js'
import type { Db } from '../db/connect.js'
import { paginate, type ListPage, type Row } from '../db/pagination.js'
import { reading } from '../db/replicas.js'
import { embedRelations, OWNER_FILTER, PARENT_FILTER, type RelationData } from '../db/resource.js'
import type { AccessUser } from '../plugins/auth.js'
import { badRequest } from '../schema/errors.js'
import { narrowFilters, shownRow, shownRows, withOwnerColumn } from './field-rules.js'
import { relationOwners } from './resource.js'
import type { ListRequest } from './served-resource.js'

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

/**
 * A page of the list relation `related` of the row `id` (`parentReadable` throws unless the caller may
 * read that row: 404), with every list parameter of its target (`q` when the target is searchable): narrowed to the
 * caller's rows when the target's read rule is an owner rule, and shown by its field rules. `readsAs`:
 * whose writes the read must see (`RoutingOptions`), the caller's by default.
 */
export async function relatedPage (app: FastifyInstance, related: RelationData, id: Key, caller: AccessUser | undefined, query: ListRequest, parentReadable: () => Promise<void>, readsAs = caller?.sub): Promise<ListPage> {
  const { relation, list } = related
  if (query.include !== undefined && query.include !== '') throw badRequest('cannot include relations in a related list', 'include')
  const searchable = list.filters?.q !== undefined
  if (query.q !== undefined && !searchable) throw badRequest(`${relation.name} cannot be searched`, 'q')
  await parentReadable()
  const filters: Record<string, unknown> = { [PARENT_FILTER]: id }
  if (searchable) filters.q = query.q
  const owner = relationOwners([related], caller).get(relation.name)
  if (owner !== undefined) filters[OWNER_FILTER] = owner
  const rules = relation.target.fieldRules
  narrowFilters(rules, caller, filters, [], related.search)
  const read = withOwnerColumn(rules, query.fields)
  const page = await reading(app.db, readsAs, async (db) => {
    const page = await paginate(db, list, { ...query, fields: read.fields }, { secret: app.tandemConfig.jwtSecret, filters })
    await related.load?.(db, page.data)
    return page
  })
  const data = shownRows(rules, caller, page.data)
  read.strip(data)
  return { ...page, data }
}
