// The GraphQL types whose relations the planner (./relations.ts) loads: every served declared
// resource, built-in or a host's. Each is read from its declaration —
// its columns and their GraphQL names, its field rules, its loaded fields, and its relations (the
// ones it declares and the inverses others declare on it) as links the data layer follows — so
// that one engine loads any relation at any depth, with each target's read rule.
import { linkOf, type Link } from '../db/relations.js'
import type { Relation as DeclaredRelation } from '../schema/relation-targets.js'
import { servedRelations } from '../schema/relation-targets.js'
import type { FieldRules, Resource } from '../schema/resource.js'
import { ownerRuleOf, resolveOwners } from '../schema/owners.js'
import type { OwnerRule } from '../db/owners.js'
import { camelCase, targetTypeOf } from '../schema/resource-sdl.js'

/** A relation field of a planned type: the type it reaches, how, and the read rule of its target. */
export interface PlannedRelation {
  /** The GraphQL type of its rows. */
  type: string
  link: Link
  /** The target's read rule narrows its rows to their owner's by its owner rule (owner rules only). */
  narrow?: { owners: OwnerRule, resource: Resource }
  /** Whether reading it needs a signed-in caller (its target is not public). */
  needsCaller: boolean
  /** A list's target declaration, whose list filters and `orderBy` the field takes. */
  listed?: Resource
}

export interface PlannedType {
  readonly name: string
  /** Its columns in their list's order, `id` first. */
  readonly columns: readonly string[]
  /** Each scalar field's column (`createdAt` → `created_at`). */
  readonly columnOf: ReadonlyMap<string, string>
  /** Each column's field (`created_at` → `createdAt`). */
  readonly fieldOf: ReadonlyMap<string, string>
  /** The fields whose column is named otherwise, as [field, column]. */
  readonly renamed: ReadonlyArray<readonly [string, string]>
  readonly fieldRules?: FieldRules | undefined
  /** Loaded fields (not columns), by GraphQL field: their column name, loaded with their declaration. */
  readonly loaded: ReadonlyMap<string, string>
  /** The declared resource, when it is one (its loaded fields are loaded through it). */
  readonly resource?: Resource | undefined
  readonly relations: ReadonlyMap<string, PlannedRelation>
}

export type PlannedTypes = ReadonlyMap<string, PlannedType>

/** A declared relation as the planner follows it: its link (the same as REST's), and its target's read rule. */
function plannedRelation (relation: DeclaredRelation): PlannedRelation {
  const { target } = relation
  const link = linkOf(relation)
  const rule = target.resource?.auth.read
  const owners = target.resource === undefined ? [] : ownerRuleOf(target.resource)
  const narrow = (rule === 'owner' || rule === 'ownerOrAdmin') && owners.length > 0 && target.resource !== undefined ? { owners, resource: target.resource } : undefined
  const listed = relation.list ? target.resource : undefined
  return { type: targetTypeOf(target), link, needsCaller: target.read !== 'public', ...narrow === undefined ? {} : { narrow }, ...listed === undefined ? {} : { listed } }
}

function typeOf (name: string, columns: readonly string[], fieldRules: FieldRules | undefined, relations: ReadonlyMap<string, PlannedRelation>, resource?: Resource): PlannedType {
  const columnOf = new Map(columns.map((column) => [camelCase(column), column]))
  return {
    name,
    columns,
    columnOf,
    fieldOf: new Map([...columnOf].map(([field, column]) => [column, field])),
    renamed: [...columnOf].filter(([field, column]) => field !== column),
    fieldRules,
    loaded: new Map((resource?.loaded ?? []).map((column) => [camelCase(column), column])),
    resource,
    relations
  }
}

const capitalized = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1)

/**
 * The planned types of an application serving `resources` (every declared one, built-ins included):
 * each declared resource's type with its served relations (those it declares, and those others add to
 * it through `inverse`: `User.profile`, `User.labels`).
 */
export function plannedTypes (resources: readonly Resource[]): PlannedTypes {
  const types = new Map<string, PlannedType>()
  resolveOwners(resources)
  for (const resource of resources) {
    const relations = new Map(servedRelations(resource, resources).map((relation) => [relation.name, plannedRelation(relation)]))
    types.set(capitalized(resource.name), typeOf(capitalized(resource.name), resource.columns, resource.fieldRules, relations, resource))
  }
  return types
}
