// The links of a declared resource's manyToMany relations that the API writes (`links`): who may
// make them, what they announce, and their names in both styles, derived once from the declaration.
import { singularName } from './plural.js'
import { resolveRelations, type Relation } from './relation-targets.js'
import type { AccessRule, LinkEvent, RelationDeclaration, Resource } from './resource.js'

const capitalized = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1)
const camelCased = (name: string): string => name.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase())

/** A manyToMany relation whose links the API writes. */
export interface ResourceLink {
  /** The relation as served (`through`, `key` naming this row, `otherKey` the other). */
  readonly relation: Relation & { readonly through: string, readonly otherKey: string }
  /** Who may link and unlink (`links`, default the resource's `auth.update`). */
  readonly rule: Exclude<AccessRule, 'public'>
  /** The events announced after a change of a link. */
  readonly events: readonly LinkEvent[]
  /** One link's name: `watcher` for `watchers`. */
  readonly singular: string
  /** REST: the path parameter naming the other row (`/tasks/:id/watchers/:userId`). */
  readonly param: string
  /** GraphQL: `linkTaskWatcher`, `unlinkTaskWatcher`. */
  readonly mutations: Readonly<Record<'link' | 'unlink', string>>
  /** GraphQL: the arguments naming the two rows, the join table's columns camelCased (`taskId`, `userId`). */
  readonly args: Readonly<Record<'key' | 'otherKey', string>>
  /** The subscriptions (and event bus topics) of the declared events: `taskWatcherLinked`. */
  readonly topics: Readonly<Record<LinkEvent, string>>
  /** GraphQL: what an event carries, `TaskWatcherLink { taskId, userId, task, watcher }`. */
  readonly payloadType: string
}

/** The links `resource` writes through the API: its manyToMany relations whose `links` rule is not false. */
export function linksOf (resource: Resource, resources: readonly Resource[]): ResourceLink[] {
  const relations = resolveRelations(resource, resources)
  const type = capitalized(resource.name)
  return relations.flatMap((relation): ResourceLink[] => {
    if (relation.kind !== 'manyToMany') return []
    const declared = resource.relations[relation.name] as RelationDeclaration & { links?: Exclude<AccessRule, 'public'> | false, events?: readonly LinkEvent[] }
    const rule = declared.links ?? resource.auth.update
    if (rule === false || rule === 'public') return []
    const singular = singularName(relation.name)
    const one = `${resource.name}${capitalized(singular)}`
    return [{
      relation: relation as ResourceLink['relation'],
      rule,
      events: [...new Set(declared.events ?? [])],
      singular,
      param: `${camelCased(relation.target.name)}Id`,
      mutations: { link: `link${type}${capitalized(singular)}`, unlink: `unlink${type}${capitalized(singular)}` },
      args: { key: camelCased(relation.key), otherKey: camelCased(relation.otherKey as string) },
      topics: { linked: `${one}Linked`, unlinked: `${one}Unlinked` },
      payloadType: `${capitalized(one)}Link`
    }]
  })
}

const described = (text: string): string => JSON.stringify(text)

/**
 * The GraphQL SDL of `resource`'s links: the mutations that make and remove one (answering the
 * resource's row, its relations selectable), and for declared events, the type an event carries and
 * its subscriptions (both rows' ids as optional arguments).
 */
export function linkSdl (resource: Resource, known: readonly Resource[]): { types: string[], mutations: string[], subscriptions: string[] } {
  const type = capitalized(resource.name)
  const sdl = { types: [] as string[], mutations: [] as string[], subscriptions: [] as string[] }
  for (const link of linksOf(resource, known)) {
    const { relation, args, mutations, singular } = link
    // The GraphQL type of the other resource (as resource-sdl.ts's `targetTypeOf` names it).
    const target = capitalized(relation.target.resource?.name ?? relation.target.name)
    const ids = `${args.key}: ID!, ${args.otherKey}: ID!`
    sdl.mutations.push(
      `  ${described(`Makes the ${relation.target.name} one of the ${resource.name}'s ${relation.name} (nothing changes when it is already): the ${resource.name}.`)}`,
      `  ${mutations.link}(${ids}): ${type}`,
      `  ${described(`Removes the ${relation.target.name} from the ${resource.name}'s ${relation.name} (NOT_FOUND when it is not among them): the ${resource.name}.`)}`,
      `  ${mutations.unlink}(${ids}): ${type}`
    )
    if (link.events.length === 0) continue
    sdl.types.push(
      `${described(`A link of ${relation.name} of ${resource.plural}, as an event carries it.`)}`,
      `type ${link.payloadType} {`,
      `  ${args.key}: ID!`,
      `  ${args.otherKey}: ID!`,
      `  ${resource.name}: ${type}!`,
      `  ${singular}: ${target}!`,
      '}'
    )
    sdl.subscriptions.push(...link.events.flatMap((event) => [
      `  ${described(`Every ${singular} ${event} to a ${resource.name} (after the write commits), or those of the given ${resource.name} or ${relation.target.name}.`)}`,
      `  ${link.topics[event]}(${args.key}: ID, ${args.otherKey}: ID): ${link.payloadType}!`
    ]))
  }
  return sdl
}
