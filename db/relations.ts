import { sql, type Expression, type RawBuilder } from 'kysely'
import { badRequest } from '../schema/errors.js'
import { readRows, type Db } from './connect.js'
import { ShapedStatements } from './statements.js'
import type { Relation } from '../schema/relation-targets.js'
import type { Database } from './types.js'
import { keyArrayType, type Key, type KeyType } from '../schema/keys.js'
import { ownedBy, ownedInRow, ownerShape, type OwnerRule } from './owners.js'

/** Embedded lists (`include=`, GraphQL nested lists by default) stop at this many items. */
export const EMBEDDED_LIMIT = 20

type Row = Record<string, unknown>

/** `include=a,b` checked against what the resource can embed; unknown → 400 on `include`. */
export function parseInclude<T extends string> (allowed: readonly T[], include: string | undefined): Set<T> {
  const wanted = new Set<T>()
  if (include === undefined) return wanted
  for (const name of include.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    if (!(allowed as readonly string[]).includes(name)) {
      throw badRequest(`include names no relation that can be included; includable: ${allowed.join(', ') || 'nothing'}`, 'include')
    }
    wanted.add(name as T)
  }
  return wanted
}

/**
 * Ids as one array parameter, `{1,2,3}`, each once. Written here rather than by pg's generic array
 * encoder, which escapes element by element: a nested GraphQL query sends a few hundred ids a level
 * (see PERFORMANCE-DECISIONS.md, 'Ids sent as one array literal').
 */
export function idArray (ids: Iterable<number>): string {
  return `{${[...new Set(ids)].join(',')}}`
}

/** An array element's text: digits as they are, any other text quoted (`"a\\"b"`), so that no key is read as NULL or split. */
const element = (key: Key): string => typeof key === 'number' || /^-?\d+$/.test(key) ? String(key) : `"${key.replace(/["\\]/g, '\\$&')}"`

/** Keys of any type as one array parameter (`idArray` for integers), each once. */
export function keyArray (keys: Iterable<Key>): string {
  return `{${[...new Set(keys)].map(element).join(',')}}`
}

/**
 * A key as relations compare it in JavaScript (a map's key): a number for an integer key, text for
 * the others (a bigint may come from the driver as a number or, beyond 2^53, as its text).
 */
export function keyOfType (type: KeyType | undefined, value: unknown): Key | undefined {
  if (value === null || value === undefined) return undefined
  if (type === undefined || type === 'integer') {
    const number = Number(value)
    return Number.isSafeInteger(number) ? number : undefined
  }
  return String(value)
}

const arrayType = (type: KeyType | undefined): string => keyArrayType(type ?? 'integer')
// Statements of keys of another type than an integer are other statements.
const typeShape = (type: KeyType | undefined): string => type === undefined || type === 'integer' ? '' : ` ${type}`

// Relation statements are built once per table, key and columns, per database handle (see `ShapedStatements`).
const compiledRelations = new WeakMap<Db, ShapedStatements>()

function shapesOf (db: Db): ShapedStatements {
  let shapes = compiledRelations.get(db)
  if (shapes === undefined) compiledRelations.set(db, shapes = new ShapedStatements())
  return shapes
}

/** Only the rows the user `value` owns by `owners` (db/owners.ts): what an owner read rule lets a caller see. */
export interface Narrowing {
  owners: OwnerRule
  value: number
}

// The condition a narrowing adds to a relation's rows of `table` (or its alias `row`), with its value in `slot`; nothing without one.
function narrowed (narrow: Narrowing | undefined, slot: unknown, table: string, row?: string): RawBuilder<unknown> {
  if (narrow === undefined) return sql``
  return sql` and ${ownedBy(narrow.owners, row ?? (ownedInRow(narrow.owners) ? undefined : table), slot)}`
}
const narrowShape = (narrow: Narrowing | undefined): string => narrow === undefined ? '' : ` narrowed ${ownerShape(narrow.owners)}`
const narrowValues = (narrow: Narrowing | undefined): unknown[] => narrow === undefined ? [] : [narrow.value]

/**
 * What a nested list asks beyond its link: its target's list filters and sort (GraphQL's
 * `Project.tasks(status: todo, orderBy: [DUE_ON_DESC])`), as the target's served resource checks and
 * narrows them (`ResourceData.listing`). Nothing: every linked row, by ascending id.
 */
export interface Listing {
  /** The rows the filters keep: the statement's shape (the filters' names), their parameters, and the target's rows as a query of its table with them in `slots`. */
  where?: { shape: string, values: readonly unknown[], rows: (slots: readonly unknown[]) => Expression<unknown> } | undefined
  /** The order, when not ascending id; ties broken by id in the same direction. */
  order?: { column: string, direction: 'asc' | 'desc' } | undefined
}

const listingShape = (listing: Listing | undefined): string => `${listing?.where === undefined ? '' : `?${listing.where.shape}`}${listing?.order === undefined ? '' : `^${listing.order.column} ${listing.order.direction}`}`
const listingValues = (listing: Listing | undefined): readonly unknown[] => listing?.where?.values ?? []

/** The rows of `table` a list reads, as `alias`: the table, or the rows its filters keep. */
function source (table: string, alias: string, listing: Listing | undefined, slots: readonly unknown[]): RawBuilder<unknown> {
  return listing?.where === undefined ? sql`${sql.table(table)} as ${sql.id(alias)}` : sql`(${listing.where.rows(slots)}) as ${sql.id(alias)}`
}

/** `order by` of a list whose columns are `ref`: its sort, then id in the same direction; `byId` (ascending id) by default. */
function orderOf (listing: Listing | undefined, ref: (column: string) => RawBuilder<unknown>, byId: RawBuilder<unknown>): RawBuilder<unknown> {
  const order = listing?.order
  if (order === undefined) return sql`order by ${byId}`
  const direction = sql.raw(order.direction)
  return order.column === 'id' ? sql`order by ${ref('id')} ${direction}` : sql`order by ${ref(order.column)} ${direction}, ${ref('id')} ${direction}`
}

/**
 * The first `limit` rows of `table` (by id) for each of `parentIds`, in ONE statement: for each
 * parent an index range scan on (key, id) that stops after `limit` rows, so no query runs per
 * parent and a parent's other children are never read (see PERFORMANCE-DECISIONS.md, 'First
 * children by a lateral index scan'). `narrow` keeps only the rows an owner rule lets the caller see.
 */
export async function firstChildren<R extends Row, K extends Key = Key> (
  db: Db,
  table: keyof Database,
  foreignKey: string,
  parentIds: readonly K[],
  columns: readonly string[],
  limit = EMBEDDED_LIMIT,
  narrow?: Narrowing,
  keyType?: KeyType,
  listing?: Listing
): Promise<Map<K, R[]>> {
  const byParent = new Map<K, R[]>(parentIds.map((id) => [id, []]))
  if (parentIds.length === 0) return byParent
  const shape = `children ${table} ${foreignKey} ${columns.join(',')}${narrowShape(narrow)}${typeShape(keyType)}${listingShape(listing)}`
  const values = [keyArray(parentIds), ...narrowValues(narrow), ...listingValues(listing)]
  const compiled = shapesOf(db).compileLimited(shape, values, [limit], ([ids, ...slots], [max]) => sql<R>`
    select children.* from unnest(${ids}::${sql.raw(arrayType(keyType))}) as parent (key)
    cross join lateral (
      select ${sql.join(columns.map((c) => sql.ref(c)))} from ${source(table, table, listing, slots.slice(narrowValues(narrow).length))}
      where ${sql.ref(foreignKey)} = parent.key${narrowed(narrow, slots[0], table)} ${orderOf(listing, (column) => sql.ref(column), sql`id`)} limit ${max}
    ) children`.compile(db))
  const rows = await readRows<R>(db, compiled)
  for (const row of rows) byParent.get(keyOfType(keyType, row[foreignKey]) as K)?.push(row)
  return byParent
}

/**
 * The first `limit` rows of `table` (by id) linked to each of `parentIds` through the join table
 * `through` (`key` names the parent, `otherKey` the row), in ONE statement, as `firstChildren`
 * does for a direct key: for each parent an index range scan on the join table's (key, otherKey).
 */
export async function firstThrough<R extends Row> (
  db: Db,
  link: { table: string, through: string, key: string, otherKey: string },
  parentIds: readonly Key[],
  columns: readonly string[],
  limit = EMBEDDED_LIMIT,
  narrow?: Narrowing,
  keyType?: KeyType,
  listing?: Listing
): Promise<Map<Key, R[]>> {
  const byParent = new Map<Key, R[]>(parentIds.map((id) => [id, []]))
  if (parentIds.length === 0) return byParent
  const { table, through, key, otherKey } = link
  const shape = `through ${table} ${through} ${key} ${otherKey} ${columns.join(',')}${narrowShape(narrow)}${typeShape(keyType)}${listingShape(listing)}`
  const values = [keyArray(parentIds), ...narrowValues(narrow), ...listingValues(listing)]
  const compiled = shapesOf(db).compileLimited(shape, values, [limit], ([ids, ...slots], [max]) => sql<R & { tandem_parent: number }>`
    select parent.key as tandem_parent, children.* from unnest(${ids}::${sql.raw(arrayType(keyType))}) as parent (key)
    cross join lateral (
      select ${sql.join(columns.map((c) => sql.ref(`other.${c}`)))} from ${sql.table(through)} as link
      join ${source(table, 'other', listing, slots.slice(narrowValues(narrow).length))} on other.id = link.${sql.ref(otherKey)}
      where link.${sql.ref(key)} = parent.key${narrowed(narrow, slots[0], table, 'other')} ${orderOf(listing, (column) => sql.ref(`other.${column}`), sql`other.id`)} limit ${max}
    ) children`.compile(db))
  const rows = await readRows<R & { tandem_parent: number }>(db, compiled)
  for (const { tandem_parent: parent, ...row } of rows) byParent.get(keyOfType(keyType, parent) as Key)?.push(row as unknown as R)
  return byParent
}

/**
 * Rows of `table` whose id (or `key`, a singular resource's key) is one of `ids`, in ONE statement,
 * keyed by it (those `narrow` keeps).
 */
export async function rowsById<R extends Row> (db: Db, table: keyof Database, ids: readonly Key[], columns: readonly string[], narrow?: Narrowing, key = 'id', keyType?: KeyType): Promise<Map<Key, R>> {
  const found = new Map<Key, R>()
  if (ids.length === 0) return found
  // By id, the statement's text is the one it always was (`where id = any(…)`), which the orders'
  // statement-count test reads; another key is quoted.
  const column = key === 'id' ? sql.raw('id') : sql.ref(key)
  const compiled = shapesOf(db).compile(`by ${key} ${table} ${columns.join(',')}${narrowShape(narrow)}${typeShape(keyType)}`, [keyArray(ids), ...narrowValues(narrow)], ([wanted, owner]) =>
    sql<R>`select ${sql.join(columns.map((c) => sql.ref(c)))} from ${sql.table(table)} where ${column} = any(${wanted}::${sql.raw(arrayType(keyType))})${narrowed(narrow, owner, table)}`.compile(db))
  const rows = await readRows<R>(db, compiled)
  for (const row of rows) found.set(keyOfType(keyType, row[key]) as Key, row)
  return found
}

/**
 * How rows find their related rows: `table`'s rows whose `key` equals the parent's `by`, or, with
 * `through`, the rows of `table` that the join table's rows whose `key` is the parent's `by` name by
 * their `otherKey`.
 */
export interface Link {
  table: keyof Database
  key: string
  by: string
  /** Many rows (the first ones by id) or one. */
  list: boolean
  through?: { table: string, otherKey: string }
  /** The type of the `by` values (and of `key`, which they are compared with). Default: integer. */
  keyType?: KeyType
}

/**
 * How a declared relation's rows are found, for REST's `include=` and GraphQL's nesting alike: a
 * belongsTo by the row's key, a hasMany or hasOne by the other's, a manyToMany through its join table.
 */
export function linkOf (relation: Relation): Link {
  const table = relation.target.table as keyof Database
  const typed = relation.keyType === undefined || relation.keyType === 'integer' ? {} : { keyType: relation.keyType }
  if (relation.kind === 'belongsTo') return { table, key: relation.target.resource?.key ?? 'id', by: relation.key, list: false, ...typed }
  if (relation.kind === 'manyToMany') return { table, key: relation.key, by: 'id', list: true, through: { table: relation.through as string, otherKey: relation.otherKey as string }, ...typed }
  return { table, key: relation.key, by: 'id', list: relation.kind === 'hasMany', ...typed }
}

/** The built-in users' relations, in one place for REST's `include=` and GraphQL's nested fields. */
export const links = {
  postsOfAuthor: { table: 'posts', key: 'author_id', by: 'id', list: true },
  commentsOfPost: { table: 'comments', key: 'post_id', by: 'id', list: true },
  authorOf: { table: 'users', key: 'id', by: 'author_id', list: false },
  postOfComment: { table: 'posts', key: 'id', by: 'post_id', list: false }
} as const satisfies Record<string, Link>

/**
 * The rows `link` leads to from parents whose `by` values are `keys`, in ONE statement, by key (those
 * `narrow` keeps; a list's, those `listing` keeps, in its order).
 */
export async function linkedRows (db: Db, link: Link, keys: readonly Key[], columns: readonly string[], limit = EMBEDDED_LIMIT, narrow?: Narrowing, listing?: Listing): Promise<ReadonlyMap<Key, Row | Row[]>> {
  if (link.through !== undefined) return firstThrough(db, { table: link.table, through: link.through.table, key: link.key, otherKey: link.through.otherKey }, keys, columns, limit, narrow, link.keyType, listing)
  if (link.list) return firstChildren(db, link.table, link.key, keys, columns, limit, narrow, link.keyType, listing)
  // One row: by its id (a belongsTo), or by the other's key (a hasOne: a singular resource's row by its parent's id).
  return rowsById(db, link.table, keys, columns, narrow, link.key, link.keyType)
}

/**
 * How a column's value is written into JSON text: as PostgreSQL's `to_json` writes it, or as a JSON
 * string of its text (an integer id answered as GraphQL's `ID`, `"42"`).
 */
export type JsonFormat = 'json' | 'text'

/** What one JSON object of a statement shows: its columns, constant members and relations, in `order`. */
export interface JsonObject {
  /** What each row shows, as [property, column] or [property, column, format] (default `json`). */
  columns: ReadonlyArray<readonly [string, string] | readonly [string, string, JsonFormat]>
  /** Members whose value is always the same JSON text (GraphQL's `__typename`), as [property, JSON]. */
  constants?: ReadonlyArray<readonly [string, string]> | undefined
  /** The properties in the order the object shows them; undefined: columns, then constants, then relations. */
  order?: readonly string[] | undefined
  below: readonly NestedRelation[]
}

/** A link followed inside one statement with the links below it (see `relationsAsJson`). */
export interface NestedRelation extends JsonObject {
  /** The property the rows go in. */
  name: string
  link: Link
  /** A list of the first `limit` rows by id; undefined: one row (null when there is none). */
  limit: number | undefined
  /** Only the rows the caller owns (an owner read rule); the caller's id is a parameter. */
  narrow?: Narrowing | undefined
  /** A list's filters and order (default: every linked row, by ascending id). */
  listing?: Listing | undefined
}

/** The text a statement's shape is known by: everything of `object` that its SQL is written from. */
export function objectShape (object: JsonObject): string {
  const known = objectShapes.get(object)
  if (known !== undefined) return known
  const constants = object.constants === undefined ? '' : `#${object.constants.join(';')}`
  const order = object.order === undefined ? '' : `@${object.order.join(';')}`
  const shape = `(${object.columns.join(';')}${constants}${order})[${shapeOf(object.below)}]`
  objectShapes.set(object, shape)
  return shape
}
// An object planned once (a GraphQL document's, per viewer) is shaped once.
const objectShapes = new WeakMap<JsonObject, string>()

function shapeOf (relations: readonly NestedRelation[]): string {
  return relations.map((r) => {
    const through = r.link.through === undefined ? '' : `~${r.link.through.table}.${r.link.through.otherKey}`
    const narrow = r.narrow === undefined ? '' : `!${ownerShape(r.narrow.owners)}`
    return `${r.name}=${r.link.table}.${r.link.key}:${r.link.by}${typeShape(r.link.keyType)}${through}${narrow}${listingShape(r.listing)}${r.limit === undefined ? '' : '*'}${objectShape(r)}`
  }).join(',')
}

/**
 * The parameters of the relations, in the order the statement takes them (as `limitsOf`): each
 * narrowed relation's owner, then its listing's filter values.
 */
export function ownersOf (relations: readonly NestedRelation[], owners: unknown[] = []): unknown[] {
  for (const relation of relations) {
    if (relation.narrow !== undefined) owners.push(relation.narrow.value)
    owners.push(...listingValues(relation.listing))
    ownersOf(relation.below, owners)
  }
  return owners
}

export function limitsOf (relations: readonly NestedRelation[], limits: number[] = []): number[] {
  for (const relation of relations) {
    if (relation.limit !== undefined) limits.push(relation.limit)
    limitsOf(relation.below, limits)
  }
  return limits
}

/** `"name":` as an SQL literal; names are GraphQL field names or columns, never input. */
const memberName = (name: string): RawBuilder<unknown> => sql.lit(`${JSON.stringify(name)}:`)

/** A column's value as JSON text (`null` for NULL), as `format` asks. */
function jsonValue (ref: string, format: JsonFormat = 'json'): RawBuilder<unknown> {
  return format === 'text'
    ? sql`coalesce(to_json(${sql.ref(ref)}::text)::text, 'null')`
    : sql`coalesce(to_json(${sql.ref(ref)})::text, 'null')`
}

/**
 * One row of `row` (an alias) as the JSON text of `object`: its members in their order, the
 * relations below as subqueries of depth `depth + 1`, which take their limits and owners from the
 * iterators in the order `limitsOf` and `ownersOf` list them.
 */
export function jsonObjectOf (object: JsonObject, row: string, depth: number, limits: Iterator<unknown>, owners: Iterator<unknown>): RawBuilder<unknown> {
  const members = new Map<string, RawBuilder<unknown>>()
  for (const [name, column, format] of object.columns) members.set(name, sql`${memberName(name)} || ${jsonValue(`${row}.${column}`, format)}`)
  for (const [name, json] of object.constants ?? []) members.set(name, sql.lit(`${JSON.stringify(name)}:${json}`))
  // Built in `below`'s order, whatever the order shown: that is the order they take their values in.
  for (const below of object.below) members.set(below.name, sql`${memberName(below.name)} || ${nestedSubquery(below, depth + 1, limits, owners, row)}`)
  const shown = object.order === undefined ? [...members.values()] : object.order.map((name) => members.get(name) as RawBuilder<unknown>)
  return shown.length === 0 ? sql`'{}'` : sql`'{' || ${sql.join(shown, sql` || ',' || `)} || '}'`
}

/**
 * A relation as a subquery answering JSON text: `r<depth>` is its table, `parent` its parent's
 * (`r<depth - 1>`). The text is concatenated from `to_json` of each value rather than built by
 * `json_agg` and `row_to_json`, which cost PostgreSQL more for the same rows: they build composite
 * rows only to print them. Lists are aggregated from an ordered, limited subquery (an index range
 * scan per parent, as in `firstChildren`), whose order `string_agg` keeps. See
 * PERFORMANCE-DECISIONS.md, 'All relations below a root in one JSON statement'.
 */
function nestedSubquery (relation: NestedRelation, depth: number, limits: Iterator<unknown>, owners: Iterator<unknown>, parent = `r${depth - 1}`): RawBuilder<unknown> {
  const row = `r${depth}`
  // Taken before the relations below take theirs: `limitsOf` and `ownersOf` list a relation's first.
  const limit = relation.limit === undefined ? undefined : limits.next().value
  const owner = relation.narrow === undefined ? undefined : owners.next().value
  const filters = listingValues(relation.listing).map(() => owners.next().value)
  const object = jsonObjectOf(relation, row, depth, limits, owners)
  const { table, key, by, through } = relation.link
  const narrowing = relation.narrow === undefined ? sql`` : sql` and ${ownedBy(relation.narrow.owners, row, owner)}`
  const link = sql.id(`l${depth}`)
  const from = source(table, row, relation.listing, filters)
  // Through a join table: its rows that name the parent, each joined to the row it names.
  const rows = through === undefined
    ? sql`from ${from}
    where ${sql.ref(`${row}.${key}`)} = ${sql.ref(`${parent}.${by}`)}${narrowing}`
    : sql`from ${sql.table(through.table)} as ${link} join ${from} on ${sql.ref(`${row}.id`)} = ${link}.${sql.ref(through.otherKey)}
    where ${link}.${sql.ref(key)} = ${sql.ref(`${parent}.${by}`)}${narrowing}`
  // One row by the other's key (a hasOne) is one of them, should the key not be unique (never an error).
  if (relation.limit === undefined) return sql`coalesce((select ${object} ${rows}${key === 'id' ? sql`` : sql` limit 1`}), 'null')`
  const json = sql.id(`j${depth}`)
  return sql`(select '[' || coalesce(string_agg(${json}.v, ','), '') || ']' from (select ${object} as v ${rows} ${orderOf(relation.listing, (column) => sql.ref(`${row}.${column}`), sql.ref(`${row}.id`))} limit ${limit}) as ${json})`
}

// A JSON string, or an integer of 16 digits or more: not the digits of a fraction or an exponent
// (nothing of a number comes before it), and no fraction nor exponent follows.
const LONG_INTEGER = /"(?:[^"\\]|\\.)*"|(?<![\d.eE+-])-?\d{16,}(?![\d.eE])/g

/**
 * JSON text parsed with every integer beyond 2^53 kept as its exact text (a bigint key's,
 * `Type.String({ format: 'int64' })`), where `JSON.parse` would round it to the nearest double. Text
 * without 16 digits in a row is parsed as it is.
 */
function parsedExactly (text: string): unknown {
  if (!/\d{16}/.test(text)) return JSON.parse(text)
  return JSON.parse(text.replace(LONG_INTEGER, (token) => token.startsWith('"') || Number.isSafeInteger(Number(token)) ? token : `"${token}"`))
}

/** Keys in order, one per parent, nulls kept: `{1,NULL,1}`, `{"a",NULL}`. */
function positionalIds (parents: readonly Row[], column: string, type: KeyType | undefined): string {
  return `{${parents.map((parent) => {
    const key = keyOfType(type, parent[column])
    return key === undefined ? 'NULL' : element(key)
  }).join(',')}}`
}

/**
 * For each of `parents` (rows of one type, which may not be in the database yet: a subscription's
 * event), every relation of `relations` and theirs below, in ONE statement that PostgreSQL answers
 * as one JSON value per parent and relation: one round trip for any depth, and the API parses a
 * few JSON texts instead of reading hundreds of rows. The answers are in the order of `parents`.
 */
export async function relationsAsJson (db: Db, parents: readonly Row[], relations: readonly NestedRelation[]): Promise<Array<Row | undefined>> {
  const answers: Array<Row | undefined> = new Array(parents.length)
  if (parents.length === 0 || relations.length === 0) return answers
  const keys = [...new Set(relations.map((relation) => relation.link.by))]
  // The type of each column's keys: every relation found by one column compares it with keys of one type.
  const typeOf = new Map(relations.map((relation) => [relation.link.by, relation.link.keyType]))
  const values = [...keys.map((key) => positionalIds(parents, key, typeOf.get(key))), ...ownersOf(relations)]
  const compiled = shapesOf(db).compileLimited(`nested ${keys.join(',')} ${shapeOf(relations)}`, values, limitsOf(relations), (slots, limits) => {
    const limitsIn = limits[Symbol.iterator]()
    const ownersIn = slots.slice(keys.length)[Symbol.iterator]()
    const shown = relations.map((relation) => sql`${nestedSubquery(relation, 1, limitsIn, ownersIn)} as ${sql.id(relation.name)}`)
    const columns = sql.join(keys.map((key) => sql.id(key)))
    const arrays = sql.join(keys.map((key, i) => sql`${slots[i]}::${sql.raw(arrayType(typeOf.get(key)))}`))
    return sql<Row>`select r0.at, ${sql.join(shown)} from unnest(${arrays}) with ordinality as r0 (${columns}, at)`.compile(db)
  })
  const rows = await readRows<Row>(db, compiled)
  for (const row of rows) {
    for (const { name } of relations) row[name] = parsedExactly(row[name] as string)
    answers[Number(row.at) - 1] = row
  }
  return answers
}
