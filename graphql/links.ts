// GraphQL's link writes of a declared resource's manyToMany relations (their SDL: schema/links.ts):
// `linkTaskWatcher(taskId, userId)` and `unlinkTaskWatcher(…)` translated to the served resource's
// `link` and `unlink`, answering the resource's row, and the subscriptions of their declared events.
import type { GraphQLResolveInfo } from 'graphql'
import type { Row } from '../db/pagination.js'
import { callerNeeded } from '../rules/resource.js'
import type { LinkEventPayload, ServedResource } from '../rules/served-resource.js'
import { linksOf } from '../schema/links.js'
import { parseKey } from '../schema/keys.js'
import type { Resource } from '../schema/resource.js'
import type { AccessUser } from '../plugins/auth.js'
import type { TandemGraphqlContext as Context } from './context.js'
import type { Asked, declaredAnswers } from './declared-answers.js'
import { answerOnce } from './event-answers.js'
import { selectedFields } from './selection.js'
import { only, subscriptionStep } from './subscription-steps.js'

type Args = Record<string, unknown>

const asked = (info: GraphQLResolveInfo, nodes: Asked['nodes'] = info.fieldNodes): Asked => ({ nodes, fragments: info.fragments, variables: info.variableValues })

/** The mutations and subscriptions of `resource`'s links, added to `Mutation` and `Subscription`. */
export function addLinkResolvers (resource: Resource, resources: readonly Resource[], model: ServedResource, answers: ReturnType<typeof declaredAnswers>, Mutation: Record<string, unknown>, Subscription: Record<string, unknown>): void {
  const { answer } = answers
  for (const link of linksOf(resource, resources)) {
    const { relation, args, singular } = link
    const target = relation.target.resource
    // Every target is served through its declaration (the built-ins' are always among them).
    if (target === undefined) throw new Error(`relation ${relation.name} of ${resource.name}: ${relation.target.name} is declared; pass its declaration with the resources`)
    // Each `ID` by the key type of the rows it names.
    const idOf = (given: Args) => parseKey(resource.keyType, given[args.key], args.key)
    const otherIdOf = (given: Args) => parseKey(target.keyType, given[args.otherKey], args.otherKey)
    const ids = (given: Args) => [idOf(given), otherIdOf(given)] as const
    // Links are never public: the viewer, or UNAUTHENTICATED.
    const write = (kind: 'link' | 'unlink') => async (_root: unknown, given: Args, ctx: Context, info: GraphQLResolveInfo) => {
      const done = await model[kind](await ctx.viewer(), relation.name, ...ids(given))
      return (await answer(ctx.app.db, resource, [{ ...done.row } as Row], asked(info), ctx.viewer))[0]
    }
    Mutation[link.mutations.link] = write('link')
    Mutation[link.mutations.unlink] = write('unlink')

    for (const event of link.events) {
      const topic = link.topics[event]
      Subscription[topic] = {
        subscribe: async (_root: unknown, given: Args, ctx: Context) => subscriptionStep(async () => {
          // A public resource asks for no token; what the other row's rule asks is the served resource's.
          const caller: AccessUser | undefined = callerNeeded(resource.auth.read) === 'nobody' && callerNeeded(target.auth.read) === 'nobody'
            ? await ctx.viewer().catch(() => undefined)
            : await ctx.viewer()
          const wanted = {
            id: given[args.key] === undefined || given[args.key] === null ? undefined : idOf(given),
            otherId: given[args.otherKey] === undefined || given[args.otherKey] === null ? undefined : otherIdOf(given)
          }
          const hears = model.hearingLinks(caller, relation.name, wanted)
          const events = await ctx.pubsub.subscribe<LinkEventPayload>(topic)
          return only(events, hears)
        }),
        // One answer per event and selection, shared by its subscribers (as a declared resource's events are).
        resolve: async (payload: LinkEventPayload, _args: Args, ctx: Context, info: GraphQLResolveInfo) => answerOnce(payload, info, async () => {
          const fields = selectedFields(info.fieldNodes, info.fragments)
          const shown = async (of: Resource, row: Row, name: string): Promise<Row | undefined> => {
            const nodes = fields.get(name)
            return nodes === undefined ? undefined : (await answer(ctx.app.db, of, [{ ...row }], asked(info, nodes), async () => undefined))[0]
          }
          return {
            [args.key]: String(payload.link[relation.key]),
            [args.otherKey]: String(payload.link[relation.otherKey]),
            [resource.name]: await shown(resource, payload.row, resource.name),
            [singular]: await shown(target, payload.other, singular)
          }
        })
      }
    }
  }
}
