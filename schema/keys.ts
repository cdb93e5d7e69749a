// The types of key a declared resource may have, read once from its representation (`defineResource`)
// and used by every layer below: the path's schema, the check of an id a host's code hands over, a
// GraphQL `ID`'s parsing, the array type relations send ids in. One place, so that a new key type is
// one more case here.
import { Type, type TSchema } from '@sinclair/typebox'
import { badRequest } from './errors.js'

/**
 * How a key is stored and shown. `integer`: a positive safe integer (`Type.Integer()`), a JSON number;
 * `bigint`: a PostgreSQL `bigint` that may exceed 2^53 (`Type.String({ format: 'int64' })`), its decimal
 * text in JSON so that no digit is lost; `uuid` (`Type.String({ format: 'uuid' })`), lower case; `text`
 * (`Type.String()`), any non-empty text. Every key is an `ID` in GraphQL.
 */
export type KeyType = 'integer' | 'bigint' | 'uuid' | 'text'

/** A key's value as the layers hand it around: a number for `integer`, text for the others. */
export type Key = number | string

/** The most characters a text key may have in a path, a cursor or a GraphQL `ID`. */
export const MAX_TEXT_KEY = 500

const INT64 = /^(0|-?[1-9]\d{0,18})$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const INT64_MAX = 9223372036854775807n
const INT64_MIN = -9223372036854775808n

/** Whether `text` is the decimal text of a PostgreSQL `bigint`. */
export function isInt64Text (text: string): boolean {
  if (!INT64.test(text)) return false
  const value = BigInt(text)
  return value >= INT64_MIN && value <= INT64_MAX
}

/** The key type of a field's schema, or why it cannot name a row (`a float`, `json`, …). */
export function keyTypeOf (schema: TSchema | undefined): KeyType | { refused: string } {
  const bare = (schema ?? {}) as { type?: unknown, format?: unknown, anyOf?: unknown, const?: unknown }
  if (bare.anyOf !== undefined) return { refused: 'a union (a key is never null, and of one type)' }
  if (bare.type === 'integer') return 'integer'
  if (bare.type === 'string' && bare.const === undefined) {
    if (bare.format === undefined) return 'text'
    if (bare.format === 'uuid') return 'uuid'
    if (bare.format === 'int64') return 'bigint'
    return { refused: `text of the format ${String(bare.format)}` }
  }
  if (bare.type === 'number') return { refused: 'a float (number)' }
  if (bare.type === 'object' || bare.type === 'array') return { refused: 'json' }
  return { refused: typeof bare.type === 'string' ? bare.type : 'unknown' }
}

/** The path parameter `{id}` of a key type: what REST validates it with (a 400 naming `id` otherwise). */
export function keySchema (type: KeyType): TSchema {
  switch (type) {
    case 'integer': return Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'A positive integer id.' })
    case 'bigint': return Type.String({ pattern: INT64.source, maxLength: 20, description: 'A bigint id, as its decimal text.' })
    case 'uuid': return Type.String({ format: 'uuid', description: 'A UUID.' })
    case 'text': return Type.String({ minLength: 1, maxLength: MAX_TEXT_KEY, description: 'A text id.' })
  }
}

/** `{ id }` of a key type, as route params. */
export const keyParams = (type: KeyType) => Type.Object({ id: keySchema(type) }, { additionalProperties: false })

const said: Record<KeyType, string> = {
  integer: 'a positive integer id',
  bigint: 'a bigint id (its decimal text)',
  uuid: 'a UUID',
  text: `a text id of 1 to ${MAX_TEXT_KEY} characters`
}

/**
 * A key handed over by a host's code, a transport or a GraphQL `ID` (text, or an integer's number),
 * as the data layer takes it: a number for `integer`, lower-case text for `uuid`, text for the others.
 * Anything else is the 400 naming `field`, never a database error (PostgreSQL refuses a malformed uuid
 * literal with 22P02). The value is never echoed.
 */
export function parseKey (type: KeyType, value: unknown, field: string): Key {
  const refused = () => badRequest(`${field} must be ${said[type]}`, field)
  if (type === 'integer') {
    const text = typeof value === 'number' ? String(value) : value
    if (typeof text !== 'string' || !/^[1-9]\d{0,15}$/.test(text) || !Number.isSafeInteger(Number(text))) throw refused()
    return Number(text)
  }
  const text = typeof value === 'number' && type === 'bigint' && Number.isSafeInteger(value) ? String(value) : value
  if (typeof text !== 'string') throw refused()
  if (type === 'bigint' && !isInt64Text(text)) throw refused()
  if (type === 'uuid') {
    if (!UUID.test(text)) throw refused()
    return text.toLowerCase()
  }
  if (type === 'text' && (text.length === 0 || text.length > MAX_TEXT_KEY)) throw refused()
  return text
}

/** The PostgreSQL array type ids of a key type are sent in (one array parameter: db/relations.ts). */
export const keyArrayType = (type: KeyType): string => type === 'uuid' ? 'uuid[]' : type === 'text' ? 'text[]' : 'bigint[]'

/** A key as read from the database, in the form a key type shows: `bigint`s as text (the driver may hand out a number). */
export function shownKey (type: KeyType, value: unknown): unknown {
  return type === 'bigint' && typeof value === 'number' ? String(value) : value
}
