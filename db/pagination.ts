import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely'
import { badRequest } from '../schema/errors.js'
import { decodeCursor, encodeCursor, fingerprint, type CursorPosition, type KeyValue } from './cursor.js'
import { readRows, type Db } from './connect.js'
import { jsonObjectOf, limitsOf, objectShape, ownersOf, type JsonObject, type Listing } from './relations.js'
import { ShapedStatements } from './statements.js'
import type { Database } from './types.js'

/** The filter that narrows a list to one owner's rows (owner read rules, field rules); not a query parameter. */
export const OWNER_FILTER = '$owner'
/** The filter that narrows `q` to the search fields a caller reads on every row (field rules); not a query parameter. */
export const READABLE_SEARCH = '$readableSearch'

export const DEFAULT_LIMIT = 20
export const MAX_LIMIT = 100

/** The list parameters of §3, as the request schema hands them over (already type-checked). */
export interface ListParams {
  limit?: number | undefined
  cursor?: string | undefined
  page?: number | undefined
  offset?: number | undefined
  sort?: string | undefined
  order?: 'asc' | 'desc' | undefined
  total?: 'true' | 'false' | 'estimated' | boolean | undefined
  fields?: string | undefined
}

/** What the pagination module needs to know about a resource. */
export interface ListSpec<Table extends keyof Database = keyof Database> {
  table: Table
  /** The columns of the representation, in output order; `id` first. */
  columns: readonly string[]
  /** Sortable fields; nullable ones are paged through NULLs (which sort last ascending). */
  sortable: Readonly<Record<string, { nullable?: boolean }>>
  /** The list's filters by name, as the request's filter values are applied. */
  filters?: Readonly<Record<string, Filter>>
}

/** How one filter narrows a list. */
export interface Filter {
  /**
   * Adds the filter's condition. `value` may stand in for the request's value while a statement is
   * compiled for many requests: use it as a parameter only, never look at it.
   */
  where: (query: BaseQuery, value: unknown) => BaseQuery
  /** The parameter from the value the request gave (and the cursor remembers). Default: that value. */
  bind?: (given: unknown) => unknown
}

export interface ListContext {
  /** Signs cursors. */
  secret: string
  /** The filters in force, so that a cursor cannot be replayed under others. */
  filters: Record<string, unknown>
}

export interface KeysetMeta {
  hasMore: boolean
  nextCursor: string | null
  limit: number
  total?: number
  totalEstimated?: boolean
}
export interface NumberedMeta {
  page?: number
  offset?: number
  limit: number
  total: number
  totalEstimated?: boolean
}
export type Row = Record<string, unknown> & { id: number }
export type KeysetPage<R = Row> = { data: R[], pagination: KeysetMeta }
export type NumberedPage<R = Row> = { data: R[], meta: NumberedMeta }
export type ListPage<R = Row> = KeysetPage<R> | NumberedPage<R>

// Any filtered `selectFrom(table)` of a resource; the module only adds selection, order and limits.
export type BaseQuery = SelectQueryBuilder<Database, any, object>

interface Sort { field: string, direction: 'asc' | 'desc', nullable: boolean }

export function parseSort (spec: ListSpec, params: ListParams): Sort {
  const raw = params.sort ?? 'id'
  const descending = raw.startsWith('-')
  const field = descending ? raw.slice(1) : raw
  const options = spec.sortable[field]
  if (options === undefined) {
    throw badRequest(`sort names a field lists cannot be sorted by; sortable: ${Object.keys(spec.sortable).join(', ')}`, 'sort')
  }
  if (descending && params.order === 'asc') throw badRequest('order=asc contradicts sort=-' + field, 'order')
  return { field, direction: descending ? 'desc' : params.order ?? 'asc', nullable: options.nullable === true }
}

/** `fields=a,b` → the columns to select (always with `id`); undefined means all of them. */
export function parseFields (spec: ListSpec, fields: string | undefined): string[] {
  if (fields === undefined) return [...spec.columns]
  const wanted = new Set(fields.split(',').map((f) => f.trim()).filter((f) => f !== ''))
  for (const field of wanted) {
    if (!spec.columns.includes(field)) {
      throw badRequest(`fields names a field the rows do not have; fields: ${spec.columns.join(', ')}`, 'fields')
    }
  }
  return spec.columns.filter((c) => c === 'id' || wanted.has(c))
}

const column = (spec: ListSpec, name: string) => sql.ref(`${spec.table}.${name}`)

export function selectColumns (query: BaseQuery, spec: ListSpec, columns: readonly string[]): BaseQuery {
  return query.select(columns.map((c) => column(spec, c).as(c)))
}

function limitOf (params: ListParams): number {
  const limit = params.limit ?? DEFAULT_LIMIT
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    throw badRequest(`limit must be an integer from 1 to ${MAX_LIMIT}`, 'limit')
  }
  return limit
}

/**
 * The keyset condition "comes after the row with sort value `value` and id `id`", NULL-safe.
 * `value` is unused when sorting by id, and `null` means the SQL NULL (a text of its own).
 */
function after (spec: ListSpec, sort: Sort, value: unknown, id: unknown): RawBuilder<boolean> {
  const idColumn = column(spec, 'id')
  const cmp = sql.raw(sort.direction === 'asc' ? '>' : '<')
  if (sort.field === 'id') return sql<boolean>`${idColumn} ${cmp} ${id}`
  const col = column(spec, sort.field)
  if (!sort.nullable) return sql<boolean>`(${col}, ${idColumn}) ${cmp} (${value}, ${id})`
  // NULLs sort after every value ascending and before every value descending (PostgreSQL's default).
  if (value === null) {
    return sort.direction === 'asc'
      ? sql<boolean>`(${col} is null and ${idColumn} > ${id})`
      : sql<boolean>`((${col} is null and ${idColumn} < ${id}) or ${col} is not null)`
  }
  const tail = sort.direction === 'asc' ? sql` or ${col} is null` : sql``
  return sql<boolean>`((${col}, ${idColumn}) ${cmp} (${value}, ${id})${tail})`
}

function keyValue (value: unknown): KeyValue {
  if (value instanceof Date) return value.toISOString()
  if (value === undefined) return null
  return value as KeyValue
}

/** The filters the request gave, in the spec's order, with the values their statements bind. */
function givenFilters (spec: ListSpec, given: Record<string, unknown>): { names: string[], values: unknown[] } {
  const names: string[] = []
  const values: unknown[] = []
  for (const name in given) {
    if (given[name] !== undefined && spec.filters?.[name] === undefined) throw new Error(`${spec.table}: no filter named ${name}`)
  }
  for (const [name, filter] of Object.entries(spec.filters ?? {})) {
    const value = given[name]
    if (value === undefined) continue
    names.push(name)
    values.push(filter.bind === undefined ? value : filter.bind(value))
  }
  return { names, values }
}

function filtered (db: Db, spec: ListSpec, names: readonly string[], values: readonly unknown[]): BaseQuery {
  let query = db.selectFrom(spec.table) as unknown as BaseQuery
  names.forEach((name, index) => { query = (spec.filters?.[name] as Filter).where(query, values[index]) })
  return query
}

async function countRows (db: Db, spec: ListSpec, filters: { names: string[], values: unknown[] }, estimated: boolean): Promise<number> {
  const base = filtered(db, spec, filters.names, filters.values)
  if (estimated) {
    const plan = await base.select(sql`1`.as('one')).explain('json')
    const explained = plan[0]?.['QUERY PLAN'] as unknown
    const parsed = (typeof explained === 'string' ? JSON.parse(explained) : explained) as Array<{ Plan: { 'Plan Rows': number } }>
    return Math.round(parsed[0]?.Plan['Plan Rows'] ?? 0)
  }
  const row = await base.select(sql<number>`count(*)`.as('n')).executeTakeFirstOrThrow()
  return Number(row.n)
}

function wantsTotal (params: ListParams): 'exact' | 'estimated' | undefined {
  if (params.total === 'estimated') return 'estimated'
  if (params.total === true || params.total === 'true') return 'exact'
  return undefined
}

function checkOffset (params: Pick<ListParams, 'offset'>): void {
  if (params.offset !== undefined && params.offset < 0) throw badRequest('offset must not be negative', 'offset')
}

interface PageQuery {
  sort: Sort
  /** The columns of the representation asked for. */
  columns: string[]
  filters: { names: string[], values: unknown[] }
  /** Only rows after this position (keyset paging). */
  after?: CursorPosition | undefined
  limit: number
  offset?: number | undefined
}

// Per database handle too: one with other Kysely plugins compiles other statements.
const compiledLists = new WeakMap<Db, WeakMap<ListSpec, ShapedStatements>>()

function shapesOf (db: Db, spec: ListSpec): ShapedStatements {
  let lists = compiledLists.get(db)
  if (lists === undefined) compiledLists.set(db, lists = new WeakMap())
  let shapes = lists.get(spec)
  if (shapes === undefined) lists.set(spec, shapes = new ShapedStatements())
  return shapes
}

/**
 * Runs the page's select, compiled once per shape of the list (see `ShapedStatements`). Rows carry
 * the sort column even when `fields=` leaves it out (the next cursor needs it): callers `strip` it.
 */
async function selectPage (db: Db, spec: ListSpec, page: PageQuery): Promise<Row[]> {
  const { sort, columns, filters, after: position } = page
  const selected = columns.includes(sort.field) ? columns : [...columns, sort.field]
  // The values in the order the builder below takes them: filters, cursor (value, id), offset.
  const values = [...filters.values]
  let afterText = ''
  if (position !== undefined) {
    afterText = sort.field === 'id' ? 'id' : position.v === null || position.v === undefined ? 'null' : 'value'
    if (afterText === 'value') values.push(position.v)
    values.push(position.i)
  }
  if (page.offset !== undefined) values.push(page.offset)
  const shape = `${filters.names.join(',')}|${sort.field} ${sort.direction}|${selected.join(',')}|${afterText}|${page.offset === undefined ? '' : 'offset'}`

  const compiled = shapesOf(db, spec).compileLimited(shape, values, [page.limit], (slots, [limit]) => {
    let next = filters.values.length
    let query = filtered(db, spec, filters.names, slots)
    if (afterText !== '') {
      const value = afterText === 'value' ? slots[next++] : null
      query = query.where(after(spec, sort, value, slots[next++]))
    }
    query = selectColumns(query, spec, selected).orderBy(column(spec, sort.field), sort.direction)
    if (sort.field !== 'id') query = query.orderBy(column(spec, 'id'), sort.direction)
    query = query.limit(limit as number)
    return page.offset === undefined ? query : query.offset(slots[next] as number)
  })
  return await readRows(db, compiled) as Row[]
}

/**
 * Just the rows of a list from `offset` on, under `filters` (named as the spec's): no cursor to sign,
 * nothing to count. For callers that show a plain list (the query style's `users(limit, offset)`).
 */
export async function listRows (db: Db, spec: ListSpec, params: Pick<ListParams, 'limit' | 'offset' | 'sort' | 'order' | 'fields'>, filters: Record<string, unknown> = {}): Promise<Row[]> {
  const limit = limitOf(params)
  checkOffset(params)
  const offset = params.offset === undefined || params.offset === 0 ? undefined : params.offset
  const sort = parseSort(spec, params)
  const columns = parseFields(spec, params.fields)
  return strip(await selectPage(db, spec, { sort, columns, filters: givenFilters(spec, filters), limit, offset }), columns, sort.field)
}

/**
 * The rows `listRows` would answer, each as the JSON text of `object` with the relations it asks
 * below, all in ONE statement that answers the JSON array's text (`[]` for none): what a query that
 * only reads columns and relations needs, from the database alone. Shapes compile once, as pages do.
 */
export async function listRowsAsJson (db: Db, spec: ListSpec, params: Pick<ListParams, 'limit' | 'offset' | 'sort' | 'order'>, filters: Record<string, unknown>, object: JsonObject): Promise<string> {
  const limit = limitOf(params)
  checkOffset(params)
  const offset = params.offset === undefined || params.offset === 0 ? undefined : params.offset
  const sort = parseSort(spec, params)
  const given = givenFilters(spec, filters)
  // The values in the order the builder takes them: filters, offset, then the owners of narrowed relations.
  const owners = ownersOf(object.below)
  const values = [...given.values, ...offset === undefined ? [] : [offset], ...owners]
  const shape = `json|${given.names.join(',')}|${sort.field} ${sort.direction}|${offset === undefined ? '' : 'offset'}|${objectShape(object)}`
  const compiled = shapesOf(db, spec).compileLimited(shape, values, [limit, ...limitsOf(object.below)], (slots, limits) => {
    const ownersIn = slots.slice(slots.length - owners.length)[Symbol.iterator]()
    const limitsIn = limits[Symbol.iterator]()
    const first = limitsIn.next().value
    let query = filtered(db, spec, given.names, slots)
      .select(sql`${jsonObjectOf(object, spec.table, 0, limitsIn, ownersIn)}`.as('v'))
      .orderBy(column(spec, sort.field), sort.direction)
    if (sort.field !== 'id') query = query.orderBy(column(spec, 'id'), sort.direction)
    query = query.limit(first as number)
    if (offset !== undefined) query = query.offset(slots[given.values.length] as number)
    return db.selectFrom(query.as('tandem_page'))
      .select(sql<string>`'[' || coalesce(string_agg(tandem_page.v, ','), '') || ']'`.as('body'))
  })
  const [row] = await readRows<{ body: string }>(db, compiled)
  return row?.body ?? '[]'
}

/**
 * A list's filters and sort as a nested list takes them below other rows (`Listing`): the rows of
 * `spec`'s table the filters keep, as a query built with `db` (its parameters are the statement's),
 * and the order, when not ascending id.
 */
export function listingOf (db: Db, spec: ListSpec, params: Pick<ListParams, 'sort' | 'order'>, filters: Record<string, unknown>): Listing {
  const sort = parseSort(spec, params)
  const given = givenFilters(spec, filters)
  return {
    ...sort.field === 'id' && sort.direction === 'asc' ? {} : { order: { column: sort.field, direction: sort.direction } },
    ...given.names.length === 0 ? {} : { where: { shape: given.names.join(','), values: given.values, rows: (slots) => filtered(db, spec, given.names, slots).selectAll() } }
  }
}

/** The cursor that continues a list sorted by `sort` after `row` (which holds the sort's column), under the filters `fingerprinted`. */
function cursorAt (secret: string, sort: Sort, fingerprinted: string, row: Row): string {
  return encodeCursor(secret, {
    s: sort.field,
    d: sort.direction,
    f: fingerprinted,
    ...(sort.field === 'id' ? {} : { v: keyValue(row[sort.field]) }),
    i: row.id
  })
}

/**
 * The cursor of each of `rows` (a page of the list `params` asks, read with its sort column): what
 * continues the list after it, in its order and under `context.filters`, as a page's `nextCursor`
 * would be there. GraphQL connections give one to every edge.
 */
export function cursorsOf (spec: ListSpec, params: Pick<ListParams, 'sort' | 'order'>, context: ListContext, rows: readonly Row[]): string[] {
  const sort = parseSort(spec, params)
  const fingerprinted = fingerprint(context.filters)
  return rows.map((row) => cursorAt(context.secret, sort, fingerprinted, row))
}

/**
 * Runs one page of a list: keyset by default (no OFFSET, cost independent of depth), or page and
 * offset modes when asked. `context.filters` are the request's filters, applied as the spec's
 * `filters` say.
 */
export async function paginate (db: Db, spec: ListSpec, params: ListParams, context: ListContext): Promise<ListPage> {
  const limit = limitOf(params)
  if (params.cursor !== undefined && (params.page !== undefined || params.offset !== undefined)) {
    throw badRequest('cursor cannot be combined with page or offset', 'cursor')
  }
  if (params.page !== undefined && params.offset !== undefined) {
    throw badRequest('page cannot be combined with offset', 'page')
  }
  checkOffset(params)
  if (params.page !== undefined && params.page < 1) throw badRequest('page must be 1 or more', 'page')
  const sort = parseSort(spec, params)
  const columns = parseFields(spec, params.fields)
  const filters = givenFilters(spec, context.filters)
  const total = wantsTotal(params)

  if (params.page !== undefined || params.offset !== undefined) {
    const offset = params.offset ?? ((params.page ?? 1) - 1) * limit
    const [rows, count] = await Promise.all([
      selectPage(db, spec, { sort, columns, filters, limit, offset }),
      countRows(db, spec, filters, total === 'estimated')
    ])
    const meta: NumberedMeta = params.page !== undefined
      ? { page: params.page, limit, total: count }
      : { offset, limit, total: count }
    if (total === 'estimated') meta.totalEstimated = true
    return { data: strip(rows, columns, sort.field), meta }
  }

  const fingerprinted = fingerprint(context.filters)
  let position: CursorPosition | undefined
  if (params.cursor !== undefined) {
    position = decodeCursor(context.secret, params.cursor)
    if (position.s !== sort.field || position.d !== sort.direction) {
      throw badRequest('cursor was made under another sort', 'cursor')
    }
    if (position.f !== fingerprinted) throw badRequest('cursor was made under other filters', 'cursor')
  }
  // One row more than asked says whether there is a next page.
  const page = { sort, columns, filters, after: position, limit: limit + 1 }
  const [rows, count] = total === undefined
    ? [await selectPage(db, spec, page), undefined]
    : await Promise.all([selectPage(db, spec, page), countRows(db, spec, filters, total === 'estimated')])
  const hasMore = rows.length > limit
  if (hasMore) rows.length = limit
  const last = rows[rows.length - 1]
  const nextCursor = hasMore && last !== undefined ? cursorAt(context.secret, sort, fingerprinted, last) : null
  const pagination: KeysetMeta = { hasMore, nextCursor, limit }
  if (count !== undefined) pagination.total = count
  if (total === 'estimated') pagination.totalEstimated = true
  return { data: strip(rows, columns, sort.field), pagination }
}

/** Drops the sort column from rows when it was selected only to build the cursor. */
function strip (rows: Row[], columns: readonly string[], sortField: string): Row[] {
  if (columns.includes(sortField)) return rows
  for (const row of rows) delete row[sortField]
  return rows
}

/** The `Link: <…>; rel="next"` value for a page, built from the request's own URL. */
export function nextLink (url: string, page: ListPage): string | undefined {
  if ('pagination' in page) {
    if (page.pagination.nextCursor === null) return undefined
    return link(url, 'cursor', page.pagination.nextCursor)
  }
  if (page.meta.page !== undefined) {
    if (page.meta.page * page.meta.limit >= page.meta.total) return undefined
    return link(url, 'page', String(page.meta.page + 1))
  }
  const offset = (page.meta.offset ?? 0) + page.meta.limit
  if (offset >= page.meta.total) return undefined
  return link(url, 'offset', String(offset))
}

// Anything that could end the `<…>` or is not plain ASCII is percent-encoded.
const UNSAFE_IN_LINK = /[^\x21-\x7e]|[<>"]/gu
const LONE_SURROGATE = /^[\ud800-\udfff]$/u
const encodeUnsafe = (unsafe: string): string => LONE_SURROGATE.test(unsafe) ? '%EF%BF%BD' : encodeURIComponent(unsafe)

/**
 * `<url with name=value>; rel="next"`: the request's other parameters as it sent them, in its order,
 * and any `name` it had (however encoded) replaced. `value` must need no encoding. Cheaper than a URL
 * parser, which served lists paid for on every page (see PERFORMANCE-DECISIONS.md, '`Link` without a
 * URL parser').
 */
function link (url: string, name: string, value: string): string {
  const question = url.indexOf('?')
  // Routing ignores repeated slashes; left in, `//host/…` would read as another server.
  const path = (question === -1 ? url : url.slice(0, question)).replace(/\/{2,}/g, '/')
  const kept = question === -1 ? [] : url.slice(question + 1).split('&').filter((pair) => pair !== '' && parameterName(pair) !== name)
  kept.push(`${name}=${value}`)
  return `<${`${path}?${kept.join('&')}`.replace(UNSAFE_IN_LINK, encodeUnsafe)}>; rel="next"`
}

function parameterName (pair: string): string {
  const equals = pair.indexOf('=')
  const name = equals === -1 ? pair : pair.slice(0, equals)
  if (!name.includes('%') && !name.includes('+')) return name
  const raw = name.replaceAll('+', ' ')
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}
