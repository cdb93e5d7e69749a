import { sql, type RawBuilder, type SelectQueryBuilder } from 'kysely'
import { badRequest } from '../schema/errors.js'
import { decodeCursor, encodeCursor, fingerprint, type CursorPosition, type KeyValue } from './cursor.js'
import type { Database } from './types.js'

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
    throw badRequest(`cannot sort by "${field}"; sortable: ${Object.keys(spec.sortable).join(', ')}`, 'sort')
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
      throw badRequest(`unknown field "${field}"; fields: ${spec.columns.join(', ')}`, 'fields')
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

/** The keyset condition "comes after `position`" for the given sort, NULL-safe. */
function after (spec: ListSpec, sort: Sort, position: CursorPosition): RawBuilder<boolean> {
  const id = column(spec, 'id')
  const cmp = sql.raw(sort.direction === 'asc' ? '>' : '<')
  if (sort.field === 'id') return sql<boolean>`${id} ${cmp} ${position.i}`
  const col = column(spec, sort.field)
  const value = position.v ?? null
  if (!sort.nullable) return sql<boolean>`(${col}, ${id}) ${cmp} (${value}, ${position.i})`
  // NULLs sort after every value ascending and before every value descending (PostgreSQL's default).
  if (value === null) {
    return sort.direction === 'asc'
      ? sql<boolean>`(${col} is null and ${id} > ${position.i})`
      : sql<boolean>`((${col} is null and ${id} < ${position.i}) or ${col} is not null)`
  }
  const tail = sort.direction === 'asc' ? sql` or ${col} is null` : sql``
  return sql<boolean>`((${col}, ${id}) ${cmp} (${value}, ${position.i})${tail})`
}

function keyValue (value: unknown): KeyValue {
  if (value instanceof Date) return value.toISOString()
  if (value === undefined) return null
  return value as KeyValue
}

async function countRows (base: BaseQuery, estimated: boolean): Promise<number> {
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

/** The list's query with its columns (and the sort column, for the cursor) in sort order. */
function orderedQuery (base: BaseQuery, spec: ListSpec, params: ListParams): { sort: Sort, columns: string[], query: BaseQuery } {
  const sort = parseSort(spec, params)
  const columns = parseFields(spec, params.fields)
  const selected = columns.includes(sort.field) ? columns : [...columns, sort.field]
  let query = selectColumns(base, spec, selected).orderBy(column(spec, sort.field), sort.direction)
  if (sort.field !== 'id') query = query.orderBy(column(spec, 'id'), sort.direction)
  return { sort, columns, query }
}

/**
 * Just the rows of a list from `offset` on: no cursor to sign, nothing to count. For callers that
 * show a plain list (the query style's `users(limit, offset)`).
 */
export async function listRows (base: BaseQuery, spec: ListSpec, params: Pick<ListParams, 'limit' | 'offset' | 'sort' | 'order' | 'fields'>): Promise<Row[]> {
  const limit = limitOf(params)
  checkOffset(params)
  const { sort, columns, query } = orderedQuery(base, spec, params)
  const limited = query.limit(limit)
  const rows = await (params.offset === undefined || params.offset === 0 ? limited : limited.offset(params.offset)).execute() as Row[]
  return strip(rows, columns, sort.field)
}

/**
 * Runs one page of a list: keyset by default (no OFFSET, cost independent of depth), or page and
 * offset modes when asked. `base` is the resource's filtered query; this adds the rest.
 */
export async function paginate (base: BaseQuery, spec: ListSpec, params: ListParams, context: ListContext): Promise<ListPage> {
  const limit = limitOf(params)
  if (params.cursor !== undefined && (params.page !== undefined || params.offset !== undefined)) {
    throw badRequest('cursor cannot be combined with page or offset', 'cursor')
  }
  if (params.page !== undefined && params.offset !== undefined) {
    throw badRequest('page cannot be combined with offset', 'page')
  }
  checkOffset(params)
  if (params.page !== undefined && params.page < 1) throw badRequest('page must be 1 or more', 'page')
  const { sort, columns, query: ordered } = orderedQuery(base, spec, params)
  let query = ordered
  const total = wantsTotal(params)

  if (params.page !== undefined || params.offset !== undefined) {
    const offset = params.offset ?? ((params.page ?? 1) - 1) * limit
    const [rows, count] = await Promise.all([
      query.limit(limit).offset(offset).execute(),
      countRows(base, total === 'estimated')
    ])
    const meta: NumberedMeta = params.page !== undefined
      ? { page: params.page, limit, total: count }
      : { offset, limit, total: count }
    if (total === 'estimated') meta.totalEstimated = true
    return { data: strip(rows as Row[], columns, sort.field), meta }
  }

  const filters = fingerprint(context.filters)
  if (params.cursor !== undefined) {
    const position = decodeCursor(context.secret, params.cursor)
    if (position.s !== sort.field || position.d !== sort.direction) {
      throw badRequest('cursor was made under another sort', 'cursor')
    }
    if (position.f !== filters) throw badRequest('cursor was made under other filters', 'cursor')
    query = query.where(after(spec, sort, position))
  }
  const [rows, count] = await Promise.all([
    query.limit(limit + 1).execute() as Promise<Row[]>,
    total === undefined ? undefined : countRows(base, total === 'estimated')
  ])
  const hasMore = rows.length > limit
  if (hasMore) rows.length = limit
  const last = rows[rows.length - 1]
  const nextCursor = hasMore && last !== undefined
    ? encodeCursor(context.secret, {
      s: sort.field,
      d: sort.direction,
      f: filters,
      ...(sort.field === 'id' ? {} : { v: keyValue(last[sort.field]) }),
      i: last.id
    })
    : null
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
  const next = new URL(url, 'http://localhost')
  if ('pagination' in page) {
    if (page.pagination.nextCursor === null) return undefined
    next.searchParams.set('cursor', page.pagination.nextCursor)
  } else if (page.meta.page !== undefined) {
    if (page.meta.page * page.meta.limit >= page.meta.total) return undefined
    next.searchParams.set('page', String(page.meta.page + 1))
  } else {
    const offset = (page.meta.offset ?? 0) + page.meta.limit
    if (offset >= page.meta.total) return undefined
    next.searchParams.set('offset', String(offset))
  }
  return `<${next.pathname}${next.search}>; rel="next"`
}
