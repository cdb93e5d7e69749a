import { sql } from 'kysely'
import { badRequest } from '../schema/errors.js'
import type { Db } from './connect.js'
import { ShapedStatements } from './statements.js'
import type { Database } from './types.js'

/** Embedded lists (`include=`, GraphQL nested lists by default) stop at this many items. */
export const EMBEDDED_LIMIT = 20

type Row = Record<string, unknown>

/** `include=a,b` checked against what the resource can embed; unknown → 400 on `include`. */
export function parseInclude<T extends string> (allowed: readonly T[], include: string | undefined): Set<T> {
  const wanted = new Set<T>()
  if (include === undefined) return wanted
  for (const name of include.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    if (!(allowed as readonly string[]).includes(name)) {
      throw badRequest(`cannot include "${name}"; includable: ${allowed.join(', ') || 'nothing'}`, 'include')
    }
    wanted.add(name as T)
  }
  return wanted
}

/**
 * Ids as one array parameter, `{1,2,3}`, each once. Written here rather than by pg's generic array
 * encoder, which escapes element by element: a nested GraphQL query sends a few hundred ids a level.
 */
export function idArray (ids: Iterable<number>): string {
  return `{${[...new Set(ids)].join(',')}}`
}

// Relation statements are built once per table, key and columns, per database handle (see `ShapedStatements`).
const compiledRelations = new WeakMap<Db, ShapedStatements>()

function shapesOf (db: Db): ShapedStatements {
  let shapes = compiledRelations.get(db)
  if (shapes === undefined) compiledRelations.set(db, shapes = new ShapedStatements())
  return shapes
}

/**
 * The first `limit` rows of `table` (by id) for each of `parentIds`, in ONE statement: for each
 * parent an index range scan on (key, id) that stops after `limit` rows, so no query runs per
 * parent and a parent's other children are never read.
 */
export async function firstChildren<R extends Row> (
  db: Db,
  table: keyof Database,
  foreignKey: string,
  parentIds: readonly number[],
  columns: readonly string[],
  limit = EMBEDDED_LIMIT
): Promise<Map<number, R[]>> {
  const byParent = new Map<number, R[]>(parentIds.map((id) => [id, []]))
  if (parentIds.length === 0) return byParent
  const compiled = shapesOf(db).compile(`children ${table} ${foreignKey} ${columns.join(',')}`, [idArray(parentIds), limit], ([ids, max]) => sql<R>`
    select children.* from unnest(${ids}::bigint[]) as parent (key)
    cross join lateral (
      select ${sql.join(columns.map((c) => sql.ref(c)))} from ${sql.table(table)}
      where ${sql.ref(foreignKey)} = parent.key order by id limit ${max}
    ) children`.compile(db))
  const { rows } = await db.executeQuery<R>(compiled)
  for (const row of rows) byParent.get(Number(row[foreignKey]))?.push(row)
  return byParent
}

/** Rows of `table` whose id is one of `ids`, in ONE statement, keyed by id. */
export async function rowsById<R extends Row> (db: Db, table: keyof Database, ids: readonly number[], columns: readonly string[]): Promise<Map<number, R>> {
  const found = new Map<number, R>()
  if (ids.length === 0) return found
  const compiled = shapesOf(db).compile(`by id ${table} ${columns.join(',')}`, [idArray(ids)], ([wanted]) =>
    sql<R>`select ${sql.join(columns.map((c) => sql.ref(c)))} from ${sql.table(table)} where id = any(${wanted}::bigint[])`.compile(db))
  const { rows } = await db.executeQuery<R>(compiled)
  for (const row of rows) found.set(Number(row.id), row)
  return found
}
