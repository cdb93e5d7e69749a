// The built-in resources that are declared with `defineResource`, and the one list every transport
// serves: theirs, then the host's.
import type { Resource } from '../schema/resource.js'
import { graphqlNames, resourceSdl } from '../schema/resource-sdl.js'
import { comments } from './comments.js'
import { orders } from './orders.js'
import { posts } from './posts.js'
import { products } from './products.js'
import { profiles } from './profiles.js'
import { users } from './users.js'

/** Tandem's own declared resources, served before any host's. */
export const builtInResources: readonly Resource[] = [users, products, posts, profiles, comments, orders]

// The paths of Tandem's routes that are not a resource's: sign-in and the one-time tokens.
const HAND_WRITTEN_PATHS = ['auth']

/**
 * The built-in declared resources followed by the host's `resources`: what REST and GraphQL serve.
 * Throws, naming both, when one takes the name or the path (plural) of a resource before it, or when
 * one's plural is the other's name (GraphQL's `people` would be one person's row and the people's
 * list): the built-ins' names are taken by them, not by a list in `defineResource`.
 */
export function servedResources (resources: readonly Resource[] = []): readonly Resource[] {
  const served: Resource[] = []
  // Lists that hold the built-ins already (what this returned) are served as they are.
  for (const resource of [...builtInResources, ...resources.filter((resource) => !builtInResources.includes(resource))]) {
    if (HAND_WRITTEN_PATHS.includes(resource.plural)) throw new Error(`defineResource(${JSON.stringify(resource.name)}): the path /${resource.plural} is taken by a built-in resource`)
    for (const before of served) {
      const clash = clashOf(resource, before)
      if (clash !== undefined) throw new Error(`defineResource(${JSON.stringify(resource.name)}): ${clash}`)
    }
    served.push(resource)
  }
  return served
}

/** How `resource` collides with the one served `before` it, named: its name, its path, or a GraphQL name of a row and a list alike. */
function clashOf (resource: Resource, before: Resource): string | undefined {
  const other = `${builtInResources.includes(before) ? 'a built-in resource' : 'another declared resource'}, defineResource(${JSON.stringify(before.name)})`
  const both = (name: string) => `: GraphQL's ${name} would be both a row and a list; give one of them a \`plural\``
  if (before.name === resource.name) return `the name ${resource.name} is taken by ${other}`
  if (before.plural === resource.plural) return `the path /${resource.plural} is taken by ${other}`
  if (before.plural === resource.name) return `the name ${resource.name} is the plural of ${other}${both(resource.name)}`
  if (before.name === resource.plural) return `the plural ${resource.plural} is the name of ${other}${both(resource.plural)}`
  return undefined
}

/**
 * The SDL of each built-in declared resource as its declaration gives it, and the file in
 * schema/graphql/declared/ that shows it (`User.graphql`, `Post.graphql`, …): written by `npm run sdl`, checked by
 * the tests. GraphQL itself builds the same SDL from the declarations as it starts.
 */
export function builtInSdlFiles (): Array<{ file: string, sdl: string }> {
  return builtInResources.map((resource) => ({ file: `${graphqlNames(resource).type}.graphql`, sdl: `${resourceSdl([resource], builtInResources)}\n` }))
}
