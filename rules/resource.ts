// The rules of a declared resource, the same for every transport.
import type { FastifyInstance } from 'fastify'
import type { ReadableKey } from '../db/resource.js'
import type { AccessUser } from '../plugins/auth.js'
import { ownedInRow } from '../db/owners.js'
import { forbidden } from '../schema/errors.js'
import { ownerRuleOf } from '../schema/owners.js'
import { tellDeclaredSubscribers } from './events.js'
import type { Relation } from '../schema/relation-targets.js'
import type { AccessRule, Resource, ResourceEvent, ResourceEventSpec } from '../schema/resource.js'

/** Who must be signed in for `rule`: nobody, any user, or an administrator (owner rules look at the row afterwards). */
export function callerNeeded (rule: AccessRule): 'nobody' | 'user' | 'admin' {
  if (rule === 'public') return 'nobody'
  return rule === 'admin' ? 'admin' : 'user'
}

/**
 * Who a read of `resource` is made as, given the viewer (the user of a valid token, if one was sent):
 * the viewer, except on a public resource without field rules, which every caller reads alike. The
 * read rule itself (`admitted`) then refuses a missing viewer where one is needed.
 */
export function readerOf (resource: Resource, viewer: AccessUser | undefined): AccessUser | undefined {
  return callerNeeded(resource.auth.read) === 'nobody' && resource.fieldRules === undefined ? undefined : viewer
}

/**
 * Whether reading `relations` needs a signed-in caller: one of their targets is not public. A public
 * resource's route or field then asks for a token before it embeds them.
 */
export function relationsNeedCaller (relations: ReadonlyArray<{ relation: Relation }>): boolean {
  return relations.some(({ relation }) => relation.target.read !== 'public')
}

/** The owner whose rows `caller` may read, or undefined for every row. */
export function readableOwner (resource: Resource, caller: AccessUser | undefined): number | undefined {
  const rule = resource.auth.read
  if (rule === 'owner') return caller?.sub ?? 0
  if (rule === 'ownerOrAdmin') return caller?.role === 'admin' ? undefined : caller?.sub ?? 0
  return undefined
}

/** Whether a single read of another owner's row is a 403 (`othersRows: 'forbidden'`) rather than a 404. */
export const forbidsOthersRows = (resource: Resource): boolean => resource.othersRows === 'forbidden'

/**
 * Why `caller` may not read a row that exists but is another owner's (an owner read rule, with
 * `othersRows: 'forbidden'`): a 403, as for a change of it.
 */
export function readRefused (resource: Resource): Error {
  return forbidden(resource.auth.read === 'owner' ? `only its owner may read this ${resource.name}` : `only its owner or an administrator may read this ${resource.name}`)
}

/**
 * The owner each of `relations` is narrowed to for `caller` (by relation name): the target's read
 * rule, as `readableOwner` applies it to the target's own lists. Relations whose target has no owner
 * rule are not in it.
 */
export function relationOwners (relations: ReadonlyArray<{ relation: Relation, owner?: unknown }>, caller: AccessUser | undefined): Map<string, number> {
  const owners = new Map<string, number>()
  for (const { relation, owner } of relations) {
    const target = relation.target.resource
    if (owner === undefined || target === undefined) continue
    const narrowed = readableOwner(target, caller)
    if (narrowed !== undefined) owners.set(relation.name, narrowed)
  }
  return owners
}

/**
 * Whether `user` owns `row`, told from its columns when the owner rule looks at nothing else;
 * undefined when it goes through a relation (the data layer's `owns` tells, on the locked row).
 */
export function ownsInRow (resource: Resource, user: number, row: Readonly<Record<string, unknown>>): boolean | undefined {
  const rule = ownerRuleOf(resource)
  if (!ownedInRow(rule)) return undefined
  return rule.some((path) => path.kind === 'column' && Number(row[path.column]) === user)
}

/**
 * Whether `caller` may read `row` by the resource's read rule (owner rules look at the row's owner),
 * told from the row alone; undefined when the owner rule goes through a relation and the caller reads
 * their own rows only.
 */
export function mayRead (resource: Resource, caller: AccessUser | undefined, row: Readonly<Record<string, unknown>>): boolean | undefined {
  const owner = readableOwner(resource, caller)
  return owner === undefined || ownsInRow(resource, owner, row)
}

/**
 * The belongsTo keys of `relations` (those `resource` serves, inverses included) that a body may
 * write and whose target is read by its owners only, each with the owner whose rows `caller` reads
 * there: a write may set such a key only to a row the caller may read (db/resource.ts checks it in
 * the write's statement). Targets every caller reads add nothing.
 */
export function readableKeys (resource: Resource, relations: readonly Relation[], caller: AccessUser | undefined): ReadableKey[] {
  const writable: readonly string[] = resource.writable
  const keys: ReadableKey[] = []
  for (const { kind, key, target } of relations) {
    const declared = target.resource
    if (kind !== 'belongsTo' || !writable.includes(key) || declared === undefined) continue
    const ownerId = readableOwner(declared, caller)
    if (ownerId !== undefined) keys.push({ field: key, table: declared.table, key: declared.key, owners: ownerRuleOf(declared), ownerId })
  }
  // A row owned through its parent alone (no owner column of its own, which a create sets to the
  // caller): a create or a change of the parent's key names a parent the caller owns; an administrator any.
  if (resource.owner === undefined && caller !== undefined && caller.role !== 'admin') {
    for (const path of ownerRuleOf(resource)) {
      if (path.kind === 'parent') keys.push({ field: path.key, table: path.table, key: path.targetKey, owners: [{ kind: 'column', column: path.column }], ownerId: caller.sub })
    }
  }
  return keys
}

/**
 * Why `caller` may not make a change of a row when they do not own it (`update`, `delete`, or the name
 * of one of the declaration's actions), or undefined when its rule does not ask who owns the row
 * (an administrator under `ownerOrAdmin`, a rule that is not an owner rule).
 */
/** The rule of a change: `update`, `delete`, or an action's. */
export const changeRule = (resource: Resource, action: string): AccessRule | false | undefined =>
  action === 'update' || action === 'delete' ? resource.auth[action] : resource.actions?.[action]?.auth

export function changeRefused (resource: Resource, action: string, caller: AccessUser | undefined): Error | undefined {
  const rule = changeRule(resource, action)
  if (rule !== 'owner' && rule !== 'ownerOrAdmin') return undefined
  if (rule === 'ownerOrAdmin' && caller?.role === 'admin') return undefined
  return forbidden(rule === 'owner' ? `only its owner may ${action} this ${resource.name}` : `only its owner or an administrator may ${action} this ${resource.name}`)
}

/**
 * The values a create writes: the body's, with the owner set to the caller, or to the owner the body
 * names when the declaration's `ownerOnCreate` allows it (which refuses by throwing).
 */
export function createdValues (resource: Resource, caller: AccessUser | undefined, body: Record<string, unknown>): Record<string, unknown> {
  const { owner, ownerOnCreate } = resource
  // A row that is its own owner (`owner: 'id'`) gets its id from the database.
  if (owner === undefined || owner === 'id' || caller === undefined) return { ...body }
  if (ownerOnCreate === undefined) return { ...body, [owner]: caller.sub }
  const named = body[owner]
  return { ...body, [owner]: ownerOnCreate(caller, named === undefined || named === null ? undefined : Number(named)) }
}

/** The values a PUT writes: every writable field, those left out (nullable ones) set to null; the write-only inputs given. */
export function replacedValues (resource: Resource, body: Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = Object.fromEntries(resource.writable.map((field) => [field, body[field] ?? null]))
  for (const input of Object.keys(resource.inputs ?? {})) if (body[input] !== undefined) values[input] = body[input]
  return values
}

const NO_INPUT: Readonly<Record<string, unknown>> = Object.freeze({})

/**
 * A body split into the columns it writes and the write-only inputs (`inputs`) it gives, which only
 * the hooks see: an input is never written as it is.
 */
export function splitInputs (resource: Resource, body: Record<string, unknown>): { values: Record<string, unknown>, input: Readonly<Record<string, unknown>> } {
  const inputs = resource.inputs
  if (inputs === undefined) return { values: body, input: NO_INPUT }
  const values: Record<string, unknown> = {}
  const input: Record<string, unknown> = {}
  for (const [field, value] of Object.entries(body)) {
    if (Object.hasOwn(inputs, field)) input[field] = value
    else values[field] = value
  }
  return { values, input }
}

/** The declared event `event` of `resource`, with its subscription (also its event bus topic: `labelCreated`), or undefined. */
export const declaredEvent = (resource: Resource, event: ResourceEvent): ResourceEventSpec | undefined =>
  resource.events.find((declared) => declared.event === event)

/** The event bus topic (and subscription) of a declared resource's event: `labelCreated`, or the name the declaration gives it. */
export const topicOf = (resource: Resource, event: ResourceEvent): string =>
  declaredEvent(resource, event)?.subscription ?? `${resource.name}${event.charAt(0).toUpperCase()}${event.slice(1)}`

/**
 * What subscribers of a declared resource's event receive: the row as REST shows it, under the
 * resource's name (`{ label }`), as the built-in topics name theirs (`commentAdded`: `{ comment }`).
 */
export type ResourceEventPayload = Readonly<Record<string, Record<string, unknown>>>

/** The row an event of `resource` carries. */
export const eventRow = (resource: Resource, payload: ResourceEventPayload): Record<string, unknown> => payload[resource.name] as Record<string, unknown>

/**
 * Announces `event` of `row` to subscribers when the declaration lists it. Call it once the write
 * has committed; a failure to tell is logged and does not undo the write.
 */
export function announce (app: FastifyInstance, resource: Resource, event: ResourceEvent, row: Record<string, unknown>): void {
  const declared = declaredEvent(resource, event)
  if (declared === undefined) return
  const payload: ResourceEventPayload = { [resource.name]: row }
  tellDeclaredSubscribers(app, declared.subscription, payload)
}

/** Whether a subscriber may hear of `row`: the read rule, with owner rules narrowing to the caller's rows (only those told by the row: see `hearing`). */
export const mayHear = (resource: Resource, caller: AccessUser | undefined, row: Readonly<Record<string, unknown>>): boolean => mayRead(resource, caller, row) === true
