import { Type, type TSchema, type TString, type TUnsafe } from '@sinclair/typebox'
import { ErrorBody } from './errors.js'

/** A string limited to the given values, documented as an `enum` (one clear error when violated). */
export const StringEnum = <T extends string>(values: readonly T[], options: Record<string, unknown> = {}): TUnsafe<T> =>
  Type.Unsafe<T>({ type: 'string', enum: values, ...options })

export const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'A positive integer id.' })
export const IdParams = Type.Object({ id: Id }, { additionalProperties: false })
/** A timestamp: handlers may hand over a Date, the serializer writes ISO-8601 UTC. */
export const Timestamp = Type.Unsafe<Date | string>({ type: 'string', format: 'date-time' })
export const Email: TString = Type.String({ format: 'email', maxLength: 254 })

/** `?version=1`: accepted everywhere, checked by the versioning plugin. */
export const VersionParam = Type.Optional(Type.String({ description: 'API version (`1`); the path or `Accept` may say it instead.' }))

export const FieldsParam = Type.Optional(Type.String({ maxLength: 500, description: 'Comma-separated fields to return (`id` always comes).' }))

/** Query string of a single-resource GET. */
export const ItemQuery = Type.Object({
  fields: FieldsParam,
  include: Type.Optional(Type.String({ maxLength: 200 })),
  version: VersionParam
}, { additionalProperties: false })

export const WriteQuery = Type.Object({ version: VersionParam }, { additionalProperties: false })

/** The list parameters of CONTRACT §3 shared by every collection, plus the resource's own. */
export function ListQuery<P extends Record<string, TSchema>> (sortable: readonly string[], filters: P) {
  return Type.Object({
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'Page size, 1–100 (default 20).' })),
    cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Opaque cursor from `pagination.nextCursor`.' })),
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Page-number mode.' })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description: 'Offset mode.' })),
    sort: Type.Optional(StringEnum(sortable.flatMap((f) => [f, '-' + f]), { description: '`field` or `-field` (descending).' })),
    order: Type.Optional(StringEnum(['asc', 'desc'] as const)),
    total: Type.Optional(StringEnum(['true', 'false', 'estimated'] as const, { description: 'Count the matches: exactly, or from the planner\'s estimate.' })),
    fields: FieldsParam,
    include: Type.Optional(Type.String({ maxLength: 200 })),
    q: Type.Optional(Type.String({ minLength: 3, maxLength: 200, description: 'Search text, at least 3 characters (matches parts of words; shorter text would match almost everything and use no index).' })),
    version: VersionParam,
    ...filters
  }, { additionalProperties: false })
}

const KeysetMeta = Type.Object({
  hasMore: Type.Boolean(),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
  limit: Type.Integer(),
  total: Type.Optional(Type.Integer()),
  totalEstimated: Type.Optional(Type.Boolean())
})
const NumberedMeta = Type.Object({
  page: Type.Optional(Type.Integer()),
  offset: Type.Optional(Type.Integer()),
  limit: Type.Integer(),
  total: Type.Integer(),
  totalEstimated: Type.Optional(Type.Boolean())
})

/** A list response: `pagination` in keyset mode, `meta` in page and offset modes. */
export const ListOf = <T extends TSchema>(item: T) => Type.Object({
  data: Type.Array(item),
  pagination: Type.Optional(KeysetMeta),
  meta: Type.Optional(NumberedMeta)
})

/** What a change or deletion by filter answers (CONTRACT §14): how many rows, and their ids. */
export const BulkAnswer = Type.Object({
  count: Type.Integer({ minimum: 0, description: 'How many rows were changed (or deleted).' }),
  ids: Type.Array(Type.Integer(), { description: 'Their ids, in ascending order.' })
}, { additionalProperties: false })

/** Every representation is returned whole unless `fields=` narrows it, so only `id` is certain. */
export const Selectable = <T extends Record<string, TSchema>>(properties: T) =>
  Type.Composite([Type.Object({ id: Id }), Type.Partial(Type.Object(properties))])

/** Error responses for the given status codes, all in the one error body shape. */
export function errors (...codes: number[]): Record<number, typeof ErrorBody> {
  return Object.fromEntries(codes.map((code) => [code, ErrorBody]))
}

export const NoContent = Type.Null({ description: 'No content' })

/** 304: the ETag sent in `If-None-Match` is current. */
export const NotModified = Type.Null({ description: 'Not modified: the ETag sent in If-None-Match is current.' })
