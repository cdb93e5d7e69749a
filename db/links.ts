// The statements that write the links of a manyToMany relation (its join table: `task_watchers
// (task_id, user_id)`). They run in the transaction that holds this row's lock (rules/links.ts).
import { sql, type Kysely } from 'kysely'
import type { Db } from './connect.js'
import type { Key } from '../schema/keys.js'
import type { Row } from './pagination.js'
import { ownedBy, ownedInRow, type OwnerRule } from './owners.js'

/** A join table: its name, the column naming this resource's row (`key`) and the other's (`otherKey`). */
export interface LinkTable {
  readonly through: string
  readonly key: string
  readonly otherKey: string
}

/** The other resource's row a link names: its table, key, columns, and the owner a caller narrowed to their rows must be. */
export interface LinkedRow {
  readonly table: string
  readonly key: string
  readonly columns: readonly string[]
  /** Under an owner read rule: its owner rule (db/owners.ts) and the caller's id (the row must be theirs). */
  readonly owner?: { readonly owners: OwnerRule, readonly id: number } | undefined
}

// The host's tables are unknown to Tandem's `Database` type (as in db/resource.ts).
const untyped = (db: Db): Kysely<any> => db as unknown as Kysely<any>

/**
 * The other row `id` as the caller may read it, or undefined. Share-locked on its key until the commit
 * (as a foreign key's check locks it): it cannot be deleted under a link being made.
 */
export async function lockLinkedRow (trx: Db, row: LinkedRow, id: Key): Promise<Row | undefined> {
  let query = untyped(trx).selectFrom(row.table).select(row.columns as string[]).where(row.key, '=', id)
  if (row.owner !== undefined) query = query.where(ownedBy(row.owner.owners, ownedInRow(row.owner.owners) ? undefined : row.table, row.owner.id, true))
  return await query.forKeyShare().executeTakeFirst() as Row | undefined
}

/**
 * Inserts the link of `id` to `otherId` unless it is there: whether it was made. Run with this row
 * locked, so that two requests for one link make one row whether or not the table has a unique key
 * (`on conflict do nothing` covers a key some other writer races).
 */
export async function insertLink (trx: Db, table: LinkTable, id: Key, otherId: Key): Promise<boolean> {
  const there = untyped(trx).selectFrom(table.through).select(sql`1`.as('there')).where(table.key, '=', id).where(table.otherKey, '=', otherId)
  const made = await untyped(trx).insertInto(table.through)
    .columns([table.key, table.otherKey])
    .expression(untyped(trx).selectNoFrom([sql`${id}`.as(table.key), sql`${otherId}`.as(table.otherKey)]).where(({ not, exists }) => not(exists(there))))
    .onConflict((conflict) => conflict.doNothing())
    .returning(sql`1`.as('made'))
    .executeTakeFirst()
  return made !== undefined
}

/** Deletes the link of `id` to `otherId`: whether there was one. */
export async function deleteLink (trx: Db, table: LinkTable, id: Key, otherId: Key): Promise<boolean> {
  const removed = await untyped(trx).deleteFrom(table.through).where(table.key, '=', id).where(table.otherKey, '=', otherId).executeTakeFirst()
  return removed.numDeletedRows > 0n
}
