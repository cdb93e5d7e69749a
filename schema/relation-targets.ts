import type { TObject } from '@sinclair/typebox'
import { Comment } from './comments.js'
import { Post } from './posts.js'
import type { AccessRule, Resource } from './resource.js'
import { User } from './users.js'

/** A resource a declared relation may reach: a declared one, or a built-in one by its name. */
export interface RelationTarget {
  name: string
  table: string
  /** Its representation, as its own routes answer it. */
  item: TObject
  read: AccessRule
  /** The declared resource, when it is one. */
  resource?: Resource
}

/** The built-in resources a declared one may point at, until they are declared themselves. */
const builtInTargets: readonly RelationTarget[] = [
  { name: 'user', table: 'users', item: User, read: 'authenticated' },
  { name: 'post', table: 'posts', item: Post, read: 'authenticated' },
  { name: 'comment', table: 'comments', item: Comment, read: 'authenticated' }
]

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
}

/** The relations of `resource`, their targets found among the built-in and the declared `resources`. */
export function resolveRelations (resource: Resource, resources: readonly Resource[]): Relation[] {
  const targets = new Map<string, RelationTarget>(builtInTargets.map((target) => [target.name, target]))
  for (const declared of resources) targets.set(declared.name, { name: declared.name, table: declared.table, item: declared.schemas.item, read: declared.auth.read, resource: declared })
  return Object.entries(resource.declaration.relations ?? {}).map(([name, declared]) => {
    const kind = (['belongsTo', 'hasMany', 'hasOne', 'manyToMany'] as const).find((option) => option in declared) as RelationKind
    const targetName = (declared as Record<string, string>)[kind] as string
    const target = targets.get(targetName)
    const where = `defineResource(${JSON.stringify(resource.name)}): relation ${name}`
    if (target === undefined) throw new Error(`${where} names ${JSON.stringify(targetName)}, which is neither a declared resource nor user, post or comment`)
    if (target.read !== 'public' && target.read !== 'authenticated') throw new Error(`${where}: a target whose reads are ${target.read}-only cannot be embedded yet`)
    // The other's key must be in its representation: rows are grouped by it.
    if ((kind === 'hasMany' || kind === 'hasOne') && !Object.hasOwn(target.item.properties, declared.key)) {
      throw new Error(`${where}: ${targetName} has no field ${JSON.stringify(declared.key)} to find them by`)
    }
    const relation: Relation = { name, kind, target, key: declared.key, list: kind === 'hasMany' || kind === 'manyToMany' }
    if ('through' in declared) Object.assign(relation, { through: declared.through, otherKey: declared.otherKey })
    return relation
  })
}
