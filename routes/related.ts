// Relations as REST's `include=` embeds them (a relation's `GET /{plural}/{id}/{relation}` is its
// target's own list: routes/resource.ts).
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type, type TObject, type TSchema } from '@sinclair/typebox'
import { parseInclude } from '../db/relations.js'
import { reading } from '../db/replicas.js'
import type { RelationData } from '../db/resource.js'
import type { Row } from '../db/pagination.js'
import type { AccessUser } from '../plugins/auth.js'
import { loadRelated } from '../rules/relations.js'
import { relationsNeedCaller } from '../rules/resource.js'
import { Selectable } from '../schema/common.js'

// Routes without an auth rule leave `request.user` unset until a relation asks for a caller.
const callerOf = (request: FastifyRequest): AccessUser | undefined => (request as { user?: AccessUser | null }).user ?? undefined

/**
 * Whose writes a read must see (read-your-writes, db/replicas.ts): the signed-in caller, or on a
 * public route that checks no token, the user of a valid one it was sent, though its rules read as
 * nobody. It only routes: a token revoked a moment ago can send a read to the primary, never show a row.
 */
export const readsAsOf = (app: FastifyInstance, request: FastifyRequest): number | undefined =>
  (callerOf(request) ?? app.accessTokens.peek(request))?.sub

/** What `include=` embeds of `relations`, as properties of a representation. */
export function relationProperties (relations: readonly RelationData[]): Record<string, TSchema> {
  const properties: Record<string, TSchema> = {}
  for (const { relation } of relations) {
    properties[relation.name] = relation.list
      ? Type.Array(relation.target.item, { maxItems: 20, description: `The first 20 ${relation.name}, by id.` })
      : Type.Union([relation.target.item, Type.Null()])
  }
  return properties
}

/** A representation narrowed by `fields=` (never leaving out its `key`), with its relations as `include=` embeds them. */
export function selectionWith (item: { properties: Record<string, TSchema> }, relations: readonly RelationData[], key = 'id'): TSchema {
  const properties: Record<string, TSchema> = {}
  for (const [field, schema] of Object.entries(item.properties)) if (field !== key) properties[field] = schema
  const rest = { ...properties, ...relationProperties(relations) }
  // An integer `id` is the shared `Id`; any other key is shown by its own schema (a uuid's text).
  return key === 'id' && (item.properties[key] as { type?: unknown } | undefined)?.type === 'integer' ? Selectable(rest) : Type.Composite([Type.Object({ [key]: item.properties[key] as TSchema }), Type.Partial(Type.Object(rest))])
}

/** A built-in representation with the relations declared resources add to it (`schema` itself when none). */
export function withAdded<T extends TObject> (schema: T, added: readonly RelationData[]): T | TObject {
  return added.length === 0 ? schema : Type.Composite([schema, Type.Partial(Type.Object(relationProperties(added)))])
}

/** A query string schema whose `include` names what may be included (`schema` itself when nothing is added). */
export function withIncludable<T extends TObject> (schema: T, builtIn: readonly string[], added: readonly RelationData[]): T {
  if (added.length === 0) return schema
  const names = [...builtIn, ...added.map(({ relation }) => relation.name)]
  const include = Type.Optional(Type.String({ maxLength: 200, description: `Relations to embed, comma-separated: ${names.join(', ')}.` }))
  return { ...schema, properties: { ...schema.properties, include } }
}

/**
 * `include=` of a built-in resource with relations added by declared resources: the built-in names
 * (as the built-in queries take them) apart from the added relations. Unknown names are a 400.
 */
export function splitInclude (builtIn: readonly string[], added: readonly RelationData[], include: string | undefined): { builtIn: string | undefined, added: RelationData[] } {
  if (added.length === 0 || include === undefined) return { builtIn: include, added: [] }
  const wanted = parseInclude([...builtIn, ...added.map(({ relation }) => relation.name)], include)
  return {
    builtIn: [...wanted].filter((name) => builtIn.includes(name)).join(','),
    added: added.filter(({ relation }) => wanted.has(relation.name))
  }
}

/**
 * How rows get the relations `included`: a 401 first when one needs a caller that a public route
 * has not asked for, the `fields` to read (with the keys the relations are found by) and what embeds
 * them (narrowed as each target's read rule asks, and shown as its field rules say) and drops those
 * keys again.
 */
export async function embedding (app: FastifyInstance, request: FastifyRequest, included: readonly RelationData[], fields: string | undefined, publicRoute: boolean) {
  if (included.length === 0) return { fields, embed: async (_rows: Row[]) => {} }
  if (publicRoute && relationsNeedCaller(included)) await app.accessTokens.authenticate(request)
  const keys = included.filter(({ relation }) => relation.kind === 'belongsTo').map(({ relation }) => relation.key)
  const asked = fields?.split(',').map((field) => field.trim())
  const added = asked === undefined ? [] : keys.filter((key) => !asked.includes(key))
  return {
    fields: added.length === 0 ? fields : `${fields ?? ''},${added.join(',')}`,
    embed: async (rows: Row[]) => {
      const caller = callerOf(request)
      await reading(app.db, readsAsOf(app, request), (db) => loadRelated(db, rows, included, caller))
      for (const row of rows) for (const key of added) delete row[key]
    }
  }
}
