// Who owns a declared resource's rows, resolved through its relations' targets: `owner: ['assignee_id',
// 'project.owner_id', 'watchers']` becomes the columns and tables db/owners.ts writes its predicate
// from. Resolved once at start for every served resource (a target is only known then), checked there,
// each error naming the option.
import type { OwnerPath, OwnerRule } from '../db/owners.js'
import { resolveRelations, type Relation } from './relation-targets.js'
import type { AccessRule, Resource } from './resource.js'

const resolved = new WeakMap<Resource, OwnerRule>()

/** Whether `relation`'s target is the users' (an account is its own owner): the target's key names the user. */
const toUsers = (relation: Relation): boolean => {
  const target = relation.target.resource
  return target === undefined ? relation.target.name === 'user' : target.owner !== undefined && target.owner === target.key
}

/** The target's one owner column, when its owner is one column of its rows. */
const ownerColumnOf = (relation: Relation): string | undefined => {
  const target = relation.target.resource
  return target !== undefined && target.owner !== undefined && target.owners.length === 1 ? target.owner : undefined
}

function pathOf (resource: Resource, declared: string, relations: readonly Relation[]): OwnerPath {
  const [name, named] = declared.split('.') as [string, string | undefined]
  if (named === undefined && resource.owner === name) return { kind: 'column', column: name }
  const where = `defineResource(${JSON.stringify(resource.name)}): owner: ${declared}`
  const relation = relations.find((candidate) => candidate.name === name)
  if (relation === undefined || (relation.kind !== 'belongsTo' && relation.kind !== 'manyToMany')) throw new Error(`${where} goes through ${name}, which is not a belongsTo or a manyToMany relation`)
  const { target } = relation
  const targetKey = target.resource?.key ?? 'id'
  // A relation by its name: to users, the user it names; to a resource with an owner column, that owner.
  let column = named
  if (column === undefined && !toUsers(relation)) {
    column = ownerColumnOf(relation)
    if (column === undefined) throw new Error(`${where}: ${target.name} is neither the users nor a resource whose owner is one of its columns; name the column that names the user (${name}.{column})`)
  }
  if (column !== undefined && !Object.hasOwn(target.item.properties, column)) throw new Error(`${where}: ${target.name} has no field ${column}`)
  if (relation.kind === 'belongsTo') {
    // The user the key names, or a column of the row it names.
    if (column === undefined || (toUsers(relation) && column === targetKey)) return { kind: 'column', column: relation.key }
    return { kind: 'parent', key: relation.key, table: target.table, targetKey, column }
  }
  const link = { kind: 'member', through: relation.through as string, key: relation.key, by: resource.key, otherKey: relation.otherKey as string } as const
  if (column === undefined || (toUsers(relation) && column === targetKey)) return link
  return { ...link, target: { table: target.table, key: targetKey, column } }
}

/**
 * Resolves the owners of each of `resources` (every resource served beside them, where their
 * relations' targets are): throws, naming the resource and the option, when a path names no
 * belongsTo or manyToMany relation, or a target that is neither the users nor owned by one of its
 * columns, or a column the target does not have. Each resource is resolved once.
 */
export function resolveOwners (resources: readonly Resource[]): void {
  for (const resource of resources) {
    if (resolved.has(resource)) continue
    const needsRelations = resource.owners.some((path) => path !== resource.owner)
    const relations = needsRelations ? resolveRelations(resource, resources) : []
    resolved.set(resource, Object.freeze(resource.owners.map((path) => Object.freeze(pathOf(resource, path, relations)))))
  }
}

/**
 * The owners of `resource` as the data layer follows them (empty: no owner). A rule through a
 * relation is known once `resolveOwners` has run with its targets (the served resources do it at start).
 */
export function ownerRuleOf (resource: Resource): OwnerRule {
  const known = resolved.get(resource)
  if (known !== undefined) return known
  if (resource.owners.every((path) => path === resource.owner)) {
    const rule: OwnerRule = Object.freeze(resource.owners.map((column) => Object.freeze({ kind: 'column', column } as const)))
    resolved.set(resource, rule)
    return rule
  }
  throw new Error(`${resource.name}: its owner goes through relations, resolved with their targets: serve it with them`)
}

/**
 * Who owns a row of `resource`, in words for OpenAPI and GraphQL descriptions: "the task's owner (its
 * assignee_id, the owner_id of its project or a user its watchers link to it)"; for a row that is its
 * user's own, "the user themselves".
 */
export function ownerWords (resource: Resource): string {
  const { owners, name } = resource
  if (owners.length === 1 && owners[0] === resource.key) return `the ${name} themselves`
  const said = owners.map((path) => {
    const [relation, column] = path.split('.') as [string, string | undefined]
    if (path === resource.owner) return `its ${path}`
    const kind = resource.relations[relation]
    if (column !== undefined) return kind !== undefined && 'manyToMany' in kind ? `the ${column} of one of its ${relation}` : `the ${column} of its ${relation}`
    return kind !== undefined && 'manyToMany' in kind ? `a user its ${relation} link to it` : `its ${relation}`
  })
  const listed = said.length === 1 ? said[0] as string : `${said.slice(0, -1).join(', ')} or ${said.at(-1) as string}`
  return `the ${name}'s owner (${listed})`
}

/** Who `rule` lets call an operation of `resource`, as a sentence for its description. */
export function whoMay (resource: Resource, rule: AccessRule, read = false): string {
  if (rule === 'public') return 'Anyone may call it, signed in or not.'
  if (rule === 'authenticated') return 'Any signed-in user may call it.'
  if (rule === 'admin') return 'Only an administrator may call it.'
  const owner = ownerWords(resource)
  if (read) return `Any signed-in user may call it, and is answered only the ${resource.plural} whose owner they are: ${owner}${rule === 'ownerOrAdmin' ? '; an administrator every one' : ''}.`
  return `Only ${owner}${rule === 'ownerOrAdmin' ? ' or an administrator' : ''} may call it.`
}

/** What a create of `resource` checks of its owner, for its description: the parent the caller must own, when it is owned through one alone. */
export function createOwnerWords (resource: Resource): string {
  if (resource.owner !== undefined) return resource.owner === resource.key ? '' : ` The ${resource.owner} is the caller.`
  const keys = ownerRuleOf(resource).flatMap((path) => path.kind === 'parent' ? [path.key] : [])
  const parents = Object.entries(resource.relations).filter(([, declared]) => 'belongsTo' in declared && keys.includes(declared.key)).map(([relation]) => relation)
  return parents.length === 0 ? '' : ` The ${parents.join(' and ')} named must be one the caller owns (an administrator may name any).`
}
