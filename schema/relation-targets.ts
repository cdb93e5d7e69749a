import type { TObject } from '@sinclair/typebox'
import { Comment } from './comments.js'
import { pluralName } from './plural.js'
import { Post } from './posts.js'
import { nonNull, type AccessRule, type FieldRules, type Resource } from './resource.js'
import { keyTypeOf as fieldKeyType, type KeyType } from './keys.js'
import { User, userFieldRules } from './users.js'

/** A resource a declared relation may reach: a declared one, or a built-in one by its name. */
export interface RelationTarget {
  name: string
  table: string
  /** Its representation, as its own routes answer it. */
  item: TObject
  read: AccessRule
  /** The declared resource, when it is one. */
  resource?: Resource
  /** A built-in resource's own relations (REST `include=` names, nested routes and GraphQL fields), which an inverse may not reuse. */
  relations?: readonly string[]
  /** Its field rules: fields read by a row's owner (and administrators) only. */
  fieldRules?: FieldRules
}

/**
 * The built-in resources a declared one may point at by name. Posts are declared (rules/posts.ts):
 * their declaration, served before the host's, takes their place here; this entry names them when
 * a host's declarations are read alone (`resourceSdl([labels])`).
 */
const builtInTargets: readonly RelationTarget[] = [
  { name: 'user', table: 'users', item: User, read: 'authenticated', relations: ['posts', 'orders'], fieldRules: userFieldRules },
  { name: 'post', table: 'posts', item: Post, read: 'authenticated', relations: ['author', 'comments'] },
  { name: 'comment', table: 'comments', item: Comment, read: 'authenticated', relations: ['author', 'post'] }
]

/** The names of the built-in resources a relation may reach. */
export const builtInTargetNames: readonly string[] = builtInTargets.map((target) => target.name)

export type RelationKind = 'belongsTo' | 'hasMany' | 'hasOne' | 'manyToMany'

/** A declared relation with its target found. */
export interface Relation {
  name: string
  kind: RelationKind
  target: RelationTarget
  /** belongsTo: this row's column; hasMany/hasOne: the other's; manyToMany: the join table's, naming this row. */
  key: string
  /** manyToMany: the join table and its column naming the other row. */
  through?: string
  otherKey?: string
  /** Whether it answers a list (hasMany, manyToMany) rather than one row or null. */
  list: boolean
  /** The resource that declared it, when it is the inverse of one of that resource's relations. */
  inverseOf?: Resource
  /** A belongsTo every row has (GraphQL: `User!`). */
  required?: boolean
  /** False: a list relation with no `GET /{plural}/{id}/{name}` of its own. */
  route?: boolean
  /** False: REST's `include=` does not offer it. */
  include?: boolean
  /**
   * The type of the keys the rows are found by: a belongsTo's target's key, any other's the key of the
   * resource it is a relation of. Left out: integer (the built-ins').
   */
  keyType?: KeyType
}

/** `{ keyType }` of a resource whose key is not an integer; nothing for an integer key or a built-in target. */
const keyTypeOf = (resource: Resource | undefined): { keyType?: KeyType } =>
  resource === undefined || resource.keyType === 'integer' ? {} : { keyType: resource.keyType }

/** The path segment of a relation's target: a declared resource's plural, or a built-in one's (`posts`). */
export const pluralOf = (target: RelationTarget): string => target.resource?.plural ?? pluralName(target.name)

const KINDS = ['belongsTo', 'hasMany', 'hasOne', 'manyToMany'] as const
const camelCased = (name: string): string => name.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase())

function targetsOf (resources: readonly Resource[]): Map<string, RelationTarget> {
  const targets = new Map<string, RelationTarget>(builtInTargets.map((target) => [target.name, target]))
  for (const declared of resources) targets.set(declared.name, { name: declared.name, table: declared.table, item: declared.schemas.item, read: declared.auth.read, resource: declared, ...declared.fieldRules === undefined ? {} : { fieldRules: declared.fieldRules } })
  return targets
}

// Owner rules narrow what is embedded to the caller's rows; an administrator-only target would need a 403 per row.
function checkReadable (target: RelationTarget, where: string): void {
  if (target.read === 'admin') throw new Error(`${where}: a target whose reads are admin-only cannot be embedded yet`)
}

/**
 * Whether the rows of `child` are listed under the resource named `parent` by `key` (`listed`,
 * `under`), at the path a list relation `name` of the parent would take (`/posts/{id}/comments`,
 * `/users/{id}/posts`): the child's own list serves it, so that relation has no route of its own (two
 * would be one path twice, which Fastify refuses).
 */
function listedUnder (child: Resource | undefined, parent: string, key: string, name: string): boolean {
  return child?.plural === name && child.listedUnder.some((listed) => listed.target === parent && listed.key === key)
}

/** The relations of `resource`, their targets found among the built-in and the declared `resources`. */
export function resolveRelations (resource: Resource, resources: readonly Resource[]): Relation[] {
  const targets = targetsOf(resources)
  return Object.entries(resource.relations ?? {}).map(([name, declared]) => {
    const kind = KINDS.find((option) => option in declared) as RelationKind
    const targetName = (declared as unknown as Record<string, string>)[kind] as string
    const target = targets.get(targetName)
    const where = `defineResource(${JSON.stringify(resource.name)}): relation ${name}`
    if (target === undefined) throw new Error(`${where} names ${JSON.stringify(targetName)}, which is neither a declared resource nor user, post or comment`)
    checkReadable(target, where)
    // Its rows are one per parent, named by the parent's id: its parent reaches it, as `{name}`.
    if (target.resource?.singularOf !== undefined) throw new Error(`${where}: ${targetName} is singular: reach it through its parent ${target.resource.singularOf}`)
    // The other's key must be in its representation: rows are grouped by it.
    if ((kind === 'hasMany' || kind === 'hasOne') && !Object.hasOwn(target.item.properties, declared.key)) {
      throw new Error(`${where}: ${targetName} has no field ${JSON.stringify(declared.key)} to find them by`)
    }
    // Rows found by a field their read rule hides would tell its value to whoever may not read it.
    if ((kind === 'hasMany' || kind === 'hasOne') && target.fieldRules?.fields[declared.key] !== undefined) {
      throw new Error(`${where}: ${targetName}'s ${declared.key} has a read rule, so rows cannot be found by it`)
    }
    const relation: Relation = { name, kind, target, key: declared.key, list: kind === 'hasMany' || kind === 'manyToMany', ...keyTypeOf(kind === 'belongsTo' ? target.resource : resource) }
    // A key compared with keys of another type would find nothing, or fail in PostgreSQL: said at start.
    if (kind !== 'manyToMany') {
      const [field, schema, named] = kind === 'belongsTo'
        ? [declared.key, resource.representation.properties[declared.key], target.resource?.keyType ?? 'integer']
        : [declared.key, target.item.properties[declared.key], resource.keyType]
      const type = schema === undefined ? undefined : fieldKeyType(nonNull(schema))
      if (typeof type === 'string' && type !== named) throw new Error(`${where}: its key ${field} is ${type}, and the key it names is ${named}: declare ${field} with the schema of that key`)
    }
    if ('through' in declared) Object.assign(relation, { through: declared.through, otherKey: declared.otherKey })
    // The rows a relation lives under are always there: `under` is `required` (defineResource refuses `required: false` with it).
    if ('belongsTo' in declared && (declared.required === true || (declared.under === 'only' || declared.under === 'one'))) {
      // An owner read rule may hide the row: it could not be there for every caller (nor a row live under it).
      if (target.read === 'owner' || target.read === 'ownerOrAdmin') throw new Error(`${where}: required, but ${targetName} is read by its owners only`)
      relation.required = true
    }
    // Said, or else derived: no route of its own where the rows that live under this one serve its path.
    const route = (declared as { route?: boolean }).route ?? !(kind === 'hasMany' && listedUnder(target.resource, resource.name, declared.key, name))
    if (!route) relation.route = false
    if (declared.include === false) relation.include = false
    return relation
  })
}

/** The names a relation added to `target` may not take: its fields (as REST and GraphQL name them) and its own relations. */
function takenNames (target: RelationTarget): Set<string> {
  const fields = Object.keys(target.item.properties)
  return new Set([...fields, ...fields.map(camelCased), ...target.relations ?? Object.keys(target.resource?.relations ?? {})])
}

/**
 * Whether `name` is the path of rows listed under the resource named `target` (`/users/{id}/orders`)
 * other than those of `resource` by `key`, whose way back it is (their own list serves it).
 */
function listedPathOfOthers (name: string, target: string, resources: readonly Resource[], resource: Resource, key: string): boolean {
  return resources.some((other) => other.plural === name && other.listedUnder.some((listed) => listed.target === target && (other !== resource || listed.key !== key)))
}

/**
 * The relations that declarations in `resources` add to the resource named `name` through
 * `inverse`: the inverse of a belongsTo is a list of the declaring resource's rows (hasMany), of a
 * hasMany or hasOne the declaring row (belongsTo), of a manyToMany a manyToMany the other way.
 * An inverse whose name is taken on its resource (a field, a relation, another inverse) throws.
 */
export function inverseRelations (name: string, resources: readonly Resource[]): Relation[] {
  const targets = targetsOf(resources)
  const target = targets.get(name)
  const added: Relation[] = []
  if (target === undefined) return added
  const taken = takenNames(target)
  for (const resource of resources) {
    for (const [relationName, declared] of Object.entries(resource.relations ?? {})) {
      const kind = KINDS.find((option) => option in declared) as RelationKind
      if (declared.inverse === undefined || (declared as unknown as Record<string, string>)[kind] !== name) continue
      const where = `defineResource(${JSON.stringify(resource.name)}): relation ${relationName}: inverse ${declared.inverse}`
      if (taken.has(declared.inverse) || listedPathOfOthers(declared.inverse, name, resources, resource, declared.key)) throw new Error(`${where} is taken on ${name} (a field, a relation, another inverse of that name or the path of rows listed under it)`)
      taken.add(declared.inverse)
      const back = targets.get(resource.name) as RelationTarget
      checkReadable(back, where)
      const common = { name: declared.inverse, target: back, inverseOf: resource }
      // Found by the key of `name`'s rows, but for a belongsTo back, by the declaring resource's.
      const ownKeys = keyTypeOf(target.resource)
      if ('manyToMany' in declared) {
        added.push({ ...common, kind: 'manyToMany', key: declared.otherKey, through: declared.through, otherKey: declared.key, list: true, ...ownKeys })
      } else if ('belongsTo' in declared) {
        // The way back to rows listed under this resource is their own list's path: no route of its own.
        const route = listedUnder(resource, name, declared.key, declared.inverse) ? { route: false } : {}
        added.push({ ...common, kind: 'hasMany', key: declared.key, list: true, ...route, ...ownKeys })
      } else {
        added.push({ ...common, kind: 'belongsTo', key: declared.key, list: false, ...keyTypeOf(resource) })
      }
    }
    if (resource.singularOf === name) {
      const where = `defineResource(${JSON.stringify(resource.name)}): singularOf ${name}`
      if (taken.has(resource.name)) throw new Error(`${where}: the name ${resource.name} is taken on ${name} (a field, a relation or an inverse of that name)`)
      taken.add(resource.name)
      const back = targets.get(resource.name) as RelationTarget
      checkReadable(back, where)
      // The parent's one row of it, found by its key.
      added.push({ name: resource.name, kind: 'hasOne', key: resource.key, target: back, inverseOf: resource, list: false, ...keyTypeOf(target.resource) })
    }
  }
  return added
}

/** Where a singular resource is served: its parent's name and path segment (`user`, `users`). */
export function parentOf (resource: Resource, resources: readonly Resource[]): { name: string, plural: string } | undefined {
  const name = resource.singularOf
  if (name === undefined) return undefined
  const parent = resources.find((declared) => declared.name === name)
  if (parent !== undefined) {
    if (parent.singularOf !== undefined) throw new Error(`defineResource(${JSON.stringify(resource.name)}): singularOf ${name}, which is singular itself`)
    return { name, plural: parent.plural }
  }
  if (!builtInTargetNames.includes(name)) throw new Error(`defineResource(${JSON.stringify(resource.name)}): singularOf names ${JSON.stringify(name)}, which is neither a declared resource nor user, post or comment`)
  return { name, plural: pluralName(name) }
}

/** Every relation `resource` serves: its own, and those other declarations add to it through `inverse`. */
export function servedRelations (resource: Resource, resources: readonly Resource[]): Relation[] {
  return [...resolveRelations(resource, resources), ...inverseRelations(resource.name, resources)]
}
