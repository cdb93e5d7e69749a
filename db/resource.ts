import type { TSchema } from '@sinclair/typebox'
import { sql, type Kysely } from 'kysely'
import type { Relation } from '../schema/relation-targets.js'
import { badRequest, unprocessable } from '../schema/errors.js'
import { acceptsNull, nonNull, type FilterOperator, type LoadedField, type Resource, type ResourceFilter } from '../schema/resource.js'
import type { Db } from './connect.js'
import { conflictOn, refersToNothingError, type KeyContext } from './errors.js'
import { lockedWrite, type Precondition } from './locked-write.js'
import { listingOf, listRows, listRowsAsJson, OWNER_FILTER, paginate, parseFields, READABLE_SEARCH, selectColumns, type BaseQuery, type Filter, type ListContext, type ListPage, type ListParams, type ListSpec, type Row } from './pagination.js'
import { EMBEDDED_LIMIT, keyOfType, linkedRows, linkOf, type JsonObject, type Listing } from './relations.js'
import { keyTypeOf, shownKey, type Key } from '../schema/keys.js'
import { ownerRuleOf } from '../schema/owners.js'
import { ownedBy, ownedInRow, type OwnerRule } from './owners.js'
import { searchFilter, searchedText } from './search.js'
import { inTransaction } from './transaction.js'

export { OWNER_FILTER } from './pagination.js'

type Values = Record<string, unknown>

/**
 * What runs around a write inside its transaction (the declaration's hooks, as rules/resource-writes.ts
 * binds them): it is given the transaction, the locked current row for updates and deletions, and
 * `write`, the write's statement, which it calls once with the values to write.
 */
export type Around<Current> = (trx: Db, current: Current, write: (values: Values) => Promise<Row>) => Promise<Row>

/**
 * A foreign key that a write may only point at a row the caller may read (its target is read by its
 * owners only), or owns (the parent a row is owned through, for a create whose owner has no column of
 * the row): the column written, the target's table, key and owner rule, and the user who must own the
 * row there (rules/resource.ts, `readableKeys`).
 */
export interface ReadableKey {
  readonly field: string
  readonly table: string
  readonly key: string
  readonly owners: OwnerRule
  readonly ownerId: number
}

/** A declared resource's queries: its table is the host's, so not in Tandem's `Database` type. */
export interface ResourceData {
  readonly list: ListSpec
  page: (db: Db, params: ListParams & Record<string, unknown>, context: ListContext) => Promise<ListPage>
  /** Rows from `offset` on under `filters`, without a cursor or a count (GraphQL's plain list). */
  rows: (db: Db, params: Pick<ListParams, 'limit' | 'offset' | 'sort' | 'order' | 'fields'>, filters: Record<string, unknown>) => Promise<Row[]>
  /** The rows `rows` would answer, as the JSON array's text of `object` (columns and relations only), from one statement. */
  rowsAsJson: (db: Db, params: { limit?: number | undefined, offset?: number | undefined }, filters: Record<string, unknown>, object: JsonObject) => Promise<string>
  /**
   * The filters (named as the list's) and sort of a list nested below other rows (GraphQL's
   * `Project.tasks(status: todo, orderBy: …)`), for the relation statements (`Listing`); `db` builds
   * the filtered rows' query, which runs inside theirs.
   */
  listing: (db: Db, params: Pick<ListParams, 'sort' | 'order'>, filters: Record<string, unknown>) => Listing
  /** The row whose key (`id`, or a singular resource's key) is `id`. */
  find: (db: Db, id: Key, fields: string | undefined, owner?: number) => Promise<Row | undefined>
  /**
   * Whether `user` owns the row `id` by the owner rule, asked in the transaction of a write that has
   * locked it: what the rule reads through a relation (a parent, a join table's row) is share-locked
   * until the commit, so that the check holds for the write.
   */
  owns: (db: Db, id: Key, user: number) => Promise<boolean>
  /**
   * Inserts the row; with `around`, in a transaction that `around` runs in too. Each of `readable`
   * the row sets (not null) must name a row the caller may read, found in the insert's own statement:
   * else nothing is written, and the answer is a missing row's 422 naming the field.
   */
  create: (db: Db, values: Values, around?: Around<undefined>, readable?: readonly ReadableKey[]) => Promise<Row>
  /**
   * Inserts `rows` in as few statements as PostgreSQL's parameters allow (one for a batch of 100), in
   * the transaction `db`: the rows written, in the order given (RETURNING answers an INSERT's rows in
   * the order of its VALUES), loaded fields included. No readable-key check: give rows that need none.
   */
  createRows: (db: Db, rows: readonly Values[]) => Promise<Row[]>
  /**
   * Rows a host's code answered (a batch's `create.runMany`, its `afterCreate`s) as the statements
   * answer theirs: a bigint as its text. The same array.
   */
  shownRows: <T extends Row>(rows: T[]) => T[]
  /**
   * Locks the row, runs `check` on it, then writes; undefined when there is no such row. Each of
   * `readable` the write changes is checked in the update's statement, as a create checks them.
   */
  update: (db: Db, id: Key, values: Values, check: Precondition<Row> | undefined, around?: Around<Row>, readable?: readonly ReadableKey[]) => Promise<Row | undefined>
  /** The row as it was, or undefined when there is no such row. */
  remove: (db: Db, id: Key, check: Precondition<Row> | undefined, around?: Around<Row>) => Promise<Row | undefined>
  /**
   * The keys of the rows `filters` (named as the list's) find, in key order, each locked for update
   * (run it in the transaction that changes them): at most `limit` of them.
   */
  lockWhere: (db: Db, filters: Record<string, unknown>, limit: number) => Promise<Key[]>
  /** Locks the row, runs `check` on it, then `work` in the same transaction; undefined when there is no such row. */
  withLocked: (db: Db, id: Key, check: Precondition<Row> | undefined, work: (trx: Db, current: Row) => Promise<Row>) => Promise<Row | undefined>
}

const equals = (column: string): Filter => ({ where: (query, value) => query.where(sql.ref(column), '=', value) })

/** The condition of one declared filter; the value is only ever bound as a parameter. */
function filterOn (column: string, op: Exclude<FilterOperator, 'isNull'>): Filter {
  if (op === 'positive') return { where: (query, value) => query.where(sql<boolean>`(${sql.ref(column)} > 0) = ${value}`) }
  if (op === 'caseInsensitive') return { where: (query, value) => query.where(sql`lower(${sql.ref(column)})`, '=', sql`lower(${value})`) }
  return { where: (query, value) => query.where(sql.ref(column), op, value) }
}

/**
 * The name a NULL filter (`isNull`) is applied under when it asks for the rows whose field is not
 * null: `is null` and `is not null` are two statements (a parameter could not choose between them),
 * each of which the column's index serves. The served resource gives it the value `true`.
 */
export const notNullFilter = (name: string): string => `${name}$notNull`

const isNull = (column: string, not: boolean): Filter => ({ where: (query) => query.where(sql.ref(column), not ? 'is not' : 'is', null) })

/**
 * A NULL filter is given `true`: `false` is asked through `notNullFilter` (the served resource's
 * filters do), which a filter whose statement has no parameter cannot tell apart.
 */
function checkNullFilters (filters: readonly ResourceFilter[], given: Record<string, unknown>): void {
  for (const { name, op } of filters) if (op === 'isNull' && given[name] !== undefined && given[name] !== true) throw new Error(`${name}: a NULL filter is given true; ask for the rows that are not null with notNullFilter(${name})`)
}

/** A lower bound above an upper bound of the same field leaves nothing to find: 422 naming the lower one. */
function checkRanges (filters: readonly ResourceFilter[], given: Record<string, unknown>): void {
  for (const lower of filters.filter(({ op }) => op === '>=' || op === '>')) {
    for (const upper of filters.filter(({ field, op }) => field === lower.field && (op === '<=' || op === '<'))) {
      const low = given[lower.name]
      const high = given[upper.name]
      if (typeof low === 'number' && typeof high === 'number' && low > high) throw unprocessable(`${lower.name} must not be above ${upper.name}`, lower.name)
    }
  }
}

/**
 * `fields=` taken apart: the columns to read (undefined: all of them) and the loaded fields wanted
 * (all of them when `fields` is undefined). An unknown name is a 400 that lists every field.
 */
function splitFields (resource: Resource, fields: string | undefined): { columns: string | undefined, loaded: readonly string[] } {
  if (fields === undefined) return { columns: undefined, loaded: resource.loaded }
  if (resource.loaded.length === 0) return { columns: fields, loaded: [] }
  const wanted = fields.split(',').map((field) => field.trim()).filter((field) => field !== '')
  const known = Object.keys(resource.schemas.item.properties)
  for (const field of wanted) if (!known.includes(field)) throw badRequest(`fields names a field the rows do not have; fields: ${known.join(', ')}`, 'fields')
  const columns = wanted.filter((field) => !resource.loaded.includes(field))
  return { columns: columns.length === 0 ? 'id' : columns.join(','), loaded: resource.loaded.filter((field) => wanted.includes(field)) }
}

/** Sets the loaded fields `names` on `rows`: one call of each field's `load` for all the rows. */
export async function loadFields (resource: Resource, db: Db, rows: readonly Row[], names: readonly string[] = resource.loaded): Promise<void> {
  if (rows.length === 0) return
  // The rows' keys as the representation has them (numbers for an integer key, text for the others).
  const idOf = (row: Row): Key => keyOfType(resource.keyType, row[resource.key]) as Key
  const ids = rows.map(idOf)
  // One after the other: `db` may be a transaction, whose statements run one at a time anyway.
  for (const name of names) {
    const values = await loadedValues(resource, db, name, ids)
    for (const row of rows) row[name] = values.get(idOf(row)) ?? null
  }
}

/**
 * The loaded field `name`'s values for `ids` (keys as `keyOfType` gives them): one call of its `load`,
 * whose answer is keyed the same way, so that one keyed by a bigint column as the driver reads it (a
 * number) still finds its rows.
 */
export async function loadedValues (resource: Resource, db: Db, name: string, ids: readonly Key[]): Promise<ReadonlyMap<Key, unknown>> {
  const declared = (resource.loaders ?? {}) as Readonly<Record<string, LoadedField>>
  const answer = await (declared[name] as LoadedField).load(db, ids)
  if (resource.keyType !== 'bigint') return answer
  const byKey = new Map<Key, unknown>()
  for (const [key, value] of answer) {
    const shown = keyOfType(resource.keyType, key)
    if (shown !== undefined) byKey.set(shown, value)
  }
  return byKey
}

const named = (value: unknown): boolean => value !== null && value !== undefined

/**
 * That `value` names a row of `ref`'s target the caller may read. The row is share-locked until the
 * commit: an owner's change made meanwhile waits for the write, or, committed first, is what the
 * check sees (the statement re-reads the row it waited for); a deletion is the foreign key's.
 */
const readableRow = (ref: ReadableKey, value: unknown) =>
  sql<boolean>`exists (select 1 from ${sql.table(ref.table)} where ${sql.ref(ref.key)} = ${value} and ${ownedBy(ref.owners, qualifier(ref.owners, ref.table), ref.ownerId, true)} for share)`

/** What qualifies a table's columns in an owner predicate: nothing for a rule of its columns alone (the statements' text as it was), else the table. */
const qualifier = (rule: OwnerRule, table: string): string | undefined => ownedInRow(rule) ? undefined : table

/**
 * Why a write that checked `checked` wrote nothing: the first of them that names no row the caller
 * may read, as a missing row's 422. Asked only on that path, and only when there are several.
 */
async function unreadable (db: Db, checked: readonly ReadableKey[], written: Values): Promise<Error> {
  for (const ref of checked.length === 1 ? [] : checked) {
    const found = await untyped(db).selectFrom(ref.table).select(sql`1`.as('found')).where(ref.key, '=', written[ref.field]).where(ownedBy(ref.owners, qualifier(ref.owners, ref.table), ref.ownerId)).executeTakeFirst()
    if (found === undefined) return refersToNothingError(ref.field)
  }
  return refersToNothingError(checked[0]?.field)
}

/** A written row with the loaded fields its write did not give. */
async function completed (resource: Resource, db: Db, row: Row): Promise<Row> {
  const missing = resource.loaded.filter((field) => !(field in row))
  if (missing.length > 0) await loadFields(resource, db, [row], missing)
  return row
}

/** `complete` for rows that may be undefined (no such row). */
const completedIf = async (resource: Resource, db: Db, row: Row | undefined): Promise<Row | undefined> =>
  row === undefined || resource.loaded.length === 0 ? row : completed(resource, db, row)

// The host's table is unknown to Tandem's `Database` type: queries on it are typed by the
// declaration's representation instead, checked when the declaration is made.
const untyped = (db: Db): Kysely<any> => db as unknown as Kysely<any>

/**
 * The filter of a list narrowed to the rows one row's list relation leads to (`linked` of
 * `resourceData`): by a hasMany's key, or through a manyToMany's join table. Given that row's id.
 */
export const linkFilter = (relation: Relation): string => relation.kind === 'manyToMany' ? `$through:${relation.through as string}.${relation.key}` : `$by:${relation.key}`

/** The rows of `table` that the join table of `relation` links to the row whose id is the value. */
const throughFilter = (table: string, relation: Relation): Filter => ({
  where: (query, id) => query.where(sql<boolean>`${sql.ref(`${table}.id`)} in (select ${sql.ref(`tandem_link.${relation.otherKey as string}`)} from ${sql.table(relation.through as string)} as tandem_link where ${sql.ref(`tandem_link.${relation.key}`)} = ${id})`)
})

/**
 * What shows the bigint columns (`Type.String({ format: 'int64' })`: a bigint key, or a key of one) of
 * rows as text, which the driver hands out as numbers up to 2^53: every row answers them alike.
 * Undefined when there is none.
 */
function bigintShown (resource: Resource): (<T extends Row | undefined>(row: T) => T) | undefined {
  const properties = resource.representation.properties
  const columns = resource.columns.filter((column) => keyTypeOf(nonNull(properties[column] as TSchema)) === 'bigint')
  if (columns.length === 0) return undefined
  return (row) => {
    if (row !== undefined) for (const column of columns) if (row[column] !== null && row[column] !== undefined) row[column] = shownKey('bigint', row[column])
    return row
  }
}

/**
 * The statements of `resource`, compiled and prepared like the built-in resources' (see db/pagination).
 * `linked` are the list relations of other rows that lead to its rows (a user's `watchedTasks`): its
 * lists may be narrowed to one such row's (`linkFilter`).
 */
export function resourceData (resource: Resource, linked: readonly Relation[] = []): ResourceData {
  const data = statementsOf(resource, linked)
  const shown = bigintShown(resource)
  if (shown === undefined) return data
  const all = <T extends Row>(rows: T[]): T[] => { for (const row of rows) shown(row); return rows }
  // The current row a write's hooks and precondition see is shown as its answer will be.
  const shownWork = <A extends unknown[]>(work: ((trx: Db, current: Row, ...rest: A) => Promise<Row>) | undefined) => work === undefined ? undefined : async (trx: Db, current: Row, ...rest: A) => await work(trx, shown(current), ...rest)
  const shownCheck = (check: Precondition<Row> | undefined): Precondition<Row> | undefined => check === undefined ? undefined : async (current, trx) => { await check(shown(current), trx) }
  return {
    ...data,
    page: async (db, params, context) => {
      const page = await data.page(db, params, context)
      all(page.data)
      return page
    },
    rows: async (db, params, filters) => all(await data.rows(db, params, filters)),
    find: async (db, id, fields, owner) => shown(await data.find(db, id, fields, owner)),
    owns: data.owns,
    create: async (db, values, around, readable) => shown(await data.create(db, values, around, readable)),
    createRows: async (db, rows) => all(await data.createRows(db, rows)),
    shownRows: all,
    update: async (db, id, values, check, around, readable) => shown(await data.update(db, id, values, shownCheck(check), shownWork(around), readable)),
    remove: async (db, id, check, around) => shown(await data.remove(db, id, shownCheck(check), shownWork(around))),
    lockWhere: async (db, filters, limit) => (await data.lockWhere(db, filters, limit)).map((key) => shownKey(resource.keyType, key) as Key),
    withLocked: async (db, id, check, work) => shown(await data.withLocked(db, id, shownCheck(check), shownWork(work) as typeof work))
  }
}

function statementsOf (resource: Resource, linked: readonly Relation[]): ResourceData {
  const { table, columns, declaration, key } = resource
  const filters: Record<string, Filter> = {}
  for (const { name, field, op } of resource.filters) {
    if (op !== 'isNull') filters[name] = filterOn(field, op)
    else [filters[name], filters[notNullFilter(name)]] = [isNull(field, false), isNull(field, true)]
  }
  // The rows a user owns: the row's owner column, or a statement through the relations the rule names.
  const owners = ownerRuleOf(resource)
  const ownedIn = qualifier(owners, table)
  if (owners.length > 0) filters[OWNER_FILTER] = { where: (query, value) => query.where(ownedBy(owners, ownedIn, value)) }
  // The rows listed under one row of a relation's target (`GET /posts/{id}/comments`), when no declared filter names them.
  for (const { key: column, filter } of resource.listedUnder) filters[filter] ??= equals(column)
  for (const relation of linked) filters[linkFilter(relation)] ??= relation.kind === 'manyToMany' ? throughFilter(table, relation) : equals(relation.key)
  if ((declaration.search ?? []).length > 0) filters.q = searchFilter(searchedText(declaration.search ?? []))
  // `q` for callers who may not read every searched field (field rules): the fields they may, beside `q`.
  const readable = (declaration.search ?? []).filter((field) => resource.fieldRules?.fields[field] === undefined)
  if (readable.length > 0 && readable.length < (declaration.search ?? []).length) filters[READABLE_SEARCH] = searchFilter(searchedText(readable))
  const list = {
    table,
    columns,
    // A singular resource (a key other than `id`) is never listed.
    sortable: key !== 'id' ? {} : Object.fromEntries(['id', ...(declaration.sort ?? [])].map((field) => [field, { nullable: acceptsNull(declaration.representation.properties[field] as TSchema) }])),
    filters
  } as unknown as ListSpec
  // A unique key of several columns is answered naming the one its client set, not the owner or a parent's key.
  const keys: KeyContext = { table, setByApi: [...new Set([resource.owner, resource.under?.key, ...resource.listedUnder.map((listed) => listed.key)].filter((column) => column !== undefined))] }
  const conflicts = (error: unknown): never => { throw conflictOn(error, keys) }
  // The locked row is whole, loaded fields included: `If-Match` compares it with what reads showed.
  const lock = (id: Key) => async (trx: Db) => completedIf(resource, trx, await untyped(trx).selectFrom(table).select(columns).where(key, '=', id).forUpdate().executeTakeFirst() as Row | undefined)

  return {
    list,
    shownRows: (rows) => rows,
    async page (db, params, context) {
      checkRanges(resource.filters, context.filters)
      checkNullFilters(resource.filters, context.filters)
      const { columns: read, loaded } = splitFields(resource, params.fields)
      const page = await paginate(db, list, read === params.fields ? params : { ...params, fields: read }, context)
      if (loaded.length > 0) await loadFields(resource, db, page.data, loaded)
      return page
    },
    async rows (db, params, filters) {
      checkRanges(resource.filters, filters)
      checkNullFilters(resource.filters, filters)
      const { columns: read, loaded } = splitFields(resource, params.fields)
      const rows = await listRows(db, list, { ...params, fields: read }, filters)
      if (loaded.length > 0) await loadFields(resource, db, rows, loaded)
      return rows
    },
    async rowsAsJson (db, params, filters, object) {
      checkRanges(resource.filters, filters)
      checkNullFilters(resource.filters, filters)
      return await listRowsAsJson(db, list, params, filters, object)
    },
    listing (db, params, filters) {
      checkRanges(resource.filters, filters)
      checkNullFilters(resource.filters, filters)
      return listingOf(db, list, params, filters)
    },
    async find (db, id, fields, owner) {
      const { columns: read, loaded } = splitFields(resource, fields)
      let query = untyped(db).selectFrom(table).where(key, '=', id) as unknown as BaseQuery
      if (owner !== undefined) query = query.where(ownedBy(owners, ownedIn, owner))
      const selected = parseFields(list, read)
      // `parseFields` always keeps `id`; another key is kept here, first as in `columns`.
      if (!selected.includes(key)) selected.unshift(key)
      const row = await selectColumns(query, list, selected).executeTakeFirst() as Row | undefined
      if (row !== undefined && loaded.length > 0) await loadFields(resource, db, [row], loaded)
      return row
    },
    async owns (db, id, user) {
      const row = await untyped(db).selectFrom(table).select(ownedBy(owners, table, user, true).as('owned')).where(key, '=', id).executeTakeFirst() as { owned: boolean } | undefined
      return row?.owned === true
    },
    async create (db, values, around, readable = []) {
      const insert = async (trx: Db, written: Values) => {
        const checked = readable.filter((ref) => named(written[ref.field]))
        if (checked.length === 0) return await untyped(trx).insertInto(table).values(written).returning(columns).executeTakeFirstOrThrow() as Row
        // `insert … select $1, $2 … where <each target readable>`: the check is the insert's own statement.
        const given = Object.entries(written).filter(([, value]) => value !== undefined)
        let select = untyped(trx).selectNoFrom(given.map(([column, value]) => sql`${value}`.as(column)))
        for (const ref of checked) select = select.where(readableRow(ref, written[ref.field]))
        const row = await untyped(trx).insertInto(table).columns(given.map(([column]) => column)).expression(select).returning(columns).executeTakeFirst() as Row | undefined
        if (row === undefined) throw await unreadable(trx, checked, written)
        return row
      }
      // Without hooks the insert is one statement, and needs no transaction of its own.
      if (around === undefined) return completed(resource, db, await insert(db, values).catch(conflicts))
      return inTransaction(db, async (trx) => completed(resource, trx, await around(trx, undefined, async (written) => insert(trx, written)))).catch(conflicts)
    },
    async createRows (db, rows) {
      const written: Row[] = []
      const width = Math.max(1, ...rows.map((row) => Object.keys(row).length))
      // PostgreSQL takes at most 65,535 parameters a statement.
      const chunk = Math.max(1, Math.floor(60_000 / width))
      for (let at = 0; at < rows.length; at += chunk) {
        written.push(...await untyped(db).insertInto(table).values(rows.slice(at, at + chunk) as Values[]).returning(columns).execute() as Row[])
      }
      const missing = resource.loaded.filter((field) => written.length > 0 && !(field in (written[0] as Row)))
      if (missing.length > 0) await loadFields(resource, db, written, missing)
      return written
    },
    async update (db, id, values, check, around, readable = []) {
      const set = async (trx: Db, current: Row, written: Values) => {
        if (Object.keys(written).length === 0) return current
        // A key left as it was names the row it named already: only a change of it is checked.
        const checked = readable.filter((ref) => named(written[ref.field]) && String(written[ref.field]) !== String(current[ref.field]))
        let query = untyped(trx).updateTable(table).set(written).where(key, '=', id)
        for (const ref of checked) query = query.where(readableRow(ref, written[ref.field]))
        if (checked.length === 0) return await query.returning(columns).executeTakeFirstOrThrow() as Row
        const row = await query.returning(columns).executeTakeFirst() as Row | undefined
        // The row is locked: only a check can have left it out.
        if (row === undefined) throw await unreadable(trx, checked, written)
        return row
      }
      return completedIf(resource, db, await lockedWrite(db, lock(id), check, async (trx, current) => around === undefined
        ? set(trx, current, values)
        : around(trx, current, async (written) => set(trx, current, written))).catch(conflicts))
    },
    async remove (db, id, check, around) {
      const remove = async (trx: Db, current: Row) => {
        await untyped(trx).deleteFrom(table).where(key, '=', id).execute()
        return current
      }
      return lockedWrite(db, lock(id), check, async (trx, current) => around === undefined
        ? remove(trx, current)
        : around(trx, current, async () => remove(trx, current)))
    },
    async lockWhere (db, given, limit) {
      checkRanges(resource.filters, given)
      checkNullFilters(resource.filters, given)
      let query = untyped(db).selectFrom(table).select(key) as unknown as BaseQuery
      for (const [name, value] of Object.entries(given)) {
        if (value === undefined) continue
        const filter = filters[name]
        if (filter === undefined) throw new Error(`${table}: no filter named ${name}`)
        query = filter.where(query, filter.bind === undefined ? value : filter.bind(value))
      }
      // In key order, as every batch locks them: two changes by filter cannot wait on each other in a cycle.
      const rows = await query.orderBy(sql.ref(key)).limit(limit).forUpdate().execute() as Row[]
      return rows.map((row) => row[key] as Key)
    },
    async withLocked (db, id, check, work) {
      return completedIf(resource, db, await lockedWrite(db, lock(id), check, work))
    }
  }
}

/** Whether `table` has the row `id` (of `owner.id`, when given): the parent of a nested list. */
export async function rowExists (db: Db, table: string, id: Key, owner?: { owners: OwnerRule, id: number }): Promise<boolean> {
  let query = untyped(db).selectFrom(table).select('id').where('id', '=', id)
  // Owned by that user (the caller an owner read rule narrows to): a row of anyone else's is none.
  if (owner !== undefined) query = query.where(ownedBy(owner.owners, ownedInRow(owner.owners) ? undefined : table, owner.id))
  return (await query.executeTakeFirst()) !== undefined
}

/** What a relation reads for `include=`: its target's columns, owner rule and loaded fields. */
export interface RelationData {
  readonly relation: Relation
  readonly columns: readonly string[]
  /** The target's owner rule, when its read rule narrows what a caller sees to their own rows. */
  readonly owner?: OwnerRule
  /** Sets the target's loaded fields on its rows, when it has some (one statement per field for all the rows). */
  readonly load?: (db: Db, rows: readonly Row[]) => Promise<void>
}

/** The statements of one relation, made once. Its list of one row's (`GET /{plural}/{id}/{relation}`) is the target's own list (`linkFilter`). */
export function relationData (relation: Relation): RelationData {
  const { target } = relation
  // Every target is read through its declaration, which must be among those served.
  if (target.resource === undefined) throw new Error(`relation ${relation.name}: ${target.name} is declared; pass its declaration with the resources`)
  const declared = target.resource
  const rule = declared.auth.read
  const owner = rule === 'owner' || rule === 'ownerOrAdmin' ? ownerRuleOf(declared) : undefined
  const load = declared.loaded.length === 0 ? undefined : async (db: Db, rows: readonly Row[]) => loadFields(declared, db, rows)
  return { relation, columns: declared.columns, ...owner === undefined ? {} : { owner }, ...load === undefined ? {} : { load } }
}

/**
 * Adds the relations `wanted` to `rows` (each row needs the columns the relations are found by:
 * `id`, and a belongsTo's key): one statement per relation, whatever the number of rows. `owners`
 * narrows a relation (by name) to the rows of that owner, as its target's read rule asks.
 */
export async function embedRelations (db: Db, rows: Row[], relations: readonly RelationData[], limits: ReadonlyMap<string, number> = new Map(), owners: ReadonlyMap<string, number> = new Map()): Promise<void> {
  if (rows.length === 0) return
  await Promise.all(relations.map(async ({ relation, columns, owner: ownerColumn, load }) => {
    const link = linkOf(relation)
    const owner = owners.get(relation.name)
    const narrow = ownerColumn === undefined || owner === undefined ? undefined : { owners: ownerColumn, value: owner }
    const keyOf = (row: Row): Key | undefined => keyOfType(link.keyType, row[link.by])
    const found = await linkedRows(db, link, rows.flatMap((row) => keyOf(row) ?? []), columns, limits.get(relation.name) ?? EMBEDDED_LIMIT, narrow)
    await load?.(db, [...found.values()].flat() as Row[])
    for (const row of rows) {
      const key = keyOf(row)
      row[relation.name] = (key === undefined ? undefined : found.get(key)) ?? (link.list ? [] : null)
    }
  }))
}
