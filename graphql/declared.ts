import type { TSchema } from '@sinclair/typebox'
import type { GraphQLResolveInfo } from 'graphql'
import type { IResolvers } from 'mercurius'
import type { Row as PageRow } from '../db/pagination.js'
import { reading } from '../db/replicas.js'
import { callerNeeded, eventRow, readerOf, type ResourceEventPayload } from '../rules/resource.js'
import { answeredToWriter } from '../rules/field-rules.js'
import type { BulkResult, ServedResource } from '../rules/served-resource.js'
import { asItem, itemError } from '../rules/resource-writes.js'
import { badRequest, notFound } from '../schema/errors.js'
import { nonNull, type AccessRule, type Resource } from '../schema/resource.js'
import { actionNames, camelCase, graphqlNames, idTypeOf, scalarOf } from '../schema/resource-sdl.js'
import { parseKey, type Key } from '../schema/keys.js'
import type { AccessUser } from '../plugins/auth.js'
import type { TandemGraphqlContext as Context } from './context.js'
import { answerOnce } from './event-answers.js'
import { checkInput, listLimit } from './inputs.js'
import { listArguments } from './list-arguments.js'
import { only, subscriptionStep } from './subscription-steps.js'
import type { declaredAnswers, Asked, Caller } from './declared-answers.js'
import { fieldRuleResolvers } from './field-rules.js'
import { addLinkResolvers } from './links.js'
import { selectedFields } from './selection.js'

type Args = Record<string, unknown>
type Row = Record<string, unknown>

/**
 * A GraphQL input as the REST body `schema` has it: field names in snake_case and `ID`s (`id`,
 * `…_id`) as integers, at every depth of its objects and lists.
 */
function asBody (schema: TSchema, value: unknown, field: string): unknown {
  const bare = nonNull(schema) as { type?: unknown, items?: TSchema, properties?: Record<string, TSchema> }
  if (value === null || value === undefined) return value
  if (bare.type === 'array' && bare.items !== undefined && Array.isArray(value)) return value.map((item) => asBody(bare.items as TSchema, item, field))
  if (bare.type === 'object' && bare.properties !== undefined && typeof value === 'object') {
    const properties = bare.properties
    const byField = new Map(Object.keys(properties).map((property) => [camelCase(property), property]))
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => {
      const property = byField.get(key) ?? key
      return [property, properties[property] === undefined ? inner : asBody(properties[property], inner, property)]
    }))
  }
  const isId = bare.type === 'integer' && (field === 'id' || field.endsWith('_id'))
  return isId ? parseKey('integer', value, camelCase(field)) : value
}

/** The caller of a field whose rule is `rule`: the viewer (UNAUTHENTICATED without a token) unless the rule is public. */
async function callerFor (ctx: Context, rule: AccessRule): Promise<AccessUser | undefined> {
  return callerNeeded(rule) === 'nobody' ? undefined : await ctx.viewer()
}

/**
 * The root fields of declared resources (their SDL: schema/resource-sdl.ts): the same rules and
 * queries as their REST routes (rules/resource.ts, db/resource.ts); only names are translated,
 * `owner_id` ↔ `ownerId`.
 */
export function declaredResolvers (resources: readonly Resource[], served: (resource: Resource) => ServedResource, answers: ReturnType<typeof declaredAnswers>): IResolvers<unknown, Context> {
  const Query: Record<string, unknown> = {}
  const Mutation: Record<string, unknown> = {}
  const Subscription: Record<string, unknown> = {}
  // The field resolvers of types with field rules (`Label.secret`), by type.
  const types: Record<string, unknown> = {}
  const { answer } = answers
  const asked = (info: GraphQLResolveInfo, nodes: Asked['nodes'] = info.fieldNodes): Asked => ({ nodes, fragments: info.fragments, variables: info.variableValues })
  for (const resource of resources) {
    const model = served(resource)
    const names = graphqlNames(resource)
    const rules = resource.fieldRules
    if (rules !== undefined) types[names.type] = fieldRuleResolvers(rules)
    // A singular resource has no list, create or delete, and names a row by its key (`userId`).
    const singular = resource.singularOf !== undefined
    // GraphQL's names of the fields and write-only inputs, to the REST body's.
    const columnOf = new Map([
      ...resource.columns.map((column) => [camelCase(column), column] as const),
      ...Object.entries(resource.inputs ?? {}).map(([input, { graphqlName }]) => [graphqlName ?? camelCase(input), input] as const)
    ])
    // The rows as GraphQL answers, with the relations `nodes` select loaded below them.
    const answered = async (ctx: Context, rows: PageRow[], selection: Asked, caller: Caller = ctx.viewer): Promise<PageRow[]> =>
      answer(ctx.app.db, resource, rows, selection, caller)
    // A query's answer: its relations read where its rows were (a replica, when one may serve `readsAs`).
    const queried = async (ctx: Context, rows: PageRow[], selection: Asked, readsAs: number | undefined): Promise<PageRow[]> =>
      reading(ctx.app.db, readsAs, (db) => answer(db, resource, rows, selection, ctx.viewer))
    // An ID input field (`authorId`, `postId`) comes as text, and the body schema wants the key as its
    // type has it (an integer's number, a uuid's text): parsed by the field's own key type.
    const idColumns = new Map([
      ...resource.columns.filter((column) => scalarOf(resource, column) === 'ID').map((column) => [column, idTypeOf(resource.representation.properties[column])] as const),
      ...Object.entries(resource.inputs ?? {}).filter(([input, { schema }]) => scalarOf(resource, input, schema) === 'ID').map(([input, { schema }]) => [input, idTypeOf(schema)] as const)
    ])
    const parseId = (column: string, value: unknown, field: string) => parseKey(idColumns.get(column) ?? 'integer', value, field)
    const asColumns = (input: Args): Row => Object.fromEntries(Object.entries(input).map(([field, value]) => {
      const column = columnOf.get(field) ?? field
      return [column, idColumns.has(column) && value !== null && value !== undefined ? parseId(column, value, field) : value]
    }))
    // Filter and orderBy arguments as the REST query string has them, checked by the same schema.
    const { filters: translatedFilters, query: listQueryOf, nullOf, refusedNull, idFilters } = listArguments(resource)
    // Who reads: a public resource asks for no token, and the field rules look at one when it is sent.
    const reader = async (ctx: Context): Promise<AccessUser | undefined> =>
      readerOf(resource, await callerFor(ctx, resource.auth.read) ?? await ctx.viewer().catch(() => undefined))
    // Whose writes the query must see (read-your-writes): the reader's, or on a public resource the
    // viewer's when a valid token was sent, though the rules read as nobody. It only routes the read.
    const readsAsOf = async (ctx: Context, reader: AccessUser | undefined): Promise<number | undefined> =>
      reader?.sub ?? (await ctx.viewer().catch(() => undefined))?.sub

    // A subscription's equality filters, as [column, value] (ids parsed).
    const subscriberFilters = (args: Args): Array<[string, unknown]> => resource.filters.filter(({ op }) => op === '=').flatMap(({ name, field }) => {
      const value = args[camelCase(name)]
      if (value === undefined) return []
      if (value === null && nullOf(name) === undefined) throw refusedNull(name)
      const type = idFilters.get(name)
      return [[field, type !== undefined && value !== null ? parseKey(type, value, camelCase(name)) : value]]
    })

    // The `fields` that load only the loaded fields `nodes` select (undefined: every field).
    const fieldsFor = (nodes: Asked['nodes'], info: GraphQLResolveInfo): string | undefined => {
      if (resource.loaded.length === 0) return undefined
      const selected = selectedFields(nodes, info.fragments)
      const loaded = resource.loaded.filter((field) => selected.has(camelCase(field)))
      return loaded.length === resource.loaded.length ? undefined : [...resource.columns, ...loaded].join(',')
    }

    Query[names.one] = async (_root: unknown, args: Args, ctx: Context, info: GraphQLResolveInfo) => {
      const caller = await reader(ctx)
      const readsAs = await readsAsOf(ctx, caller)
      const row = await model.get(caller, parseKey(resource.keyType, args[names.key], names.key), { fields: fieldsFor(info.fieldNodes, info), readsAs })
      return row === undefined ? null : (await queried(ctx, [row], asked(info), readsAs))[0]
    }
    if (!singular) {
      Query[names.list] = async (_root: unknown, args: Args, ctx: Context, info: GraphQLResolveInfo) => {
        const query = listQueryOf(args)
        const offset = args.offset as number | null | undefined ?? undefined
        // A plain list: no cursor, and no count nobody asked for.
        const caller = await reader(ctx)
        const readsAs = await readsAsOf(ctx, caller)
        const rows = await model.rows(caller, { ...query, limit: listLimit(args.limit), offset, fields: fieldsFor(info.fieldNodes, info) }, { readsAs })
        return queried(ctx, rows, asked(info), readsAs)
      }
      Query[names.listConnection] = async (_root: unknown, args: Args, ctx: Context, info: GraphQLResolveInfo) => {
        const query = listQueryOf(args)
        const nodes = selectedFields(selectedFields(info.fieldNodes, info.fragments).get('edges') ?? [], info.fragments).get('node') ?? []
        const caller = await reader(ctx)
        const readsAs = await readsAsOf(ctx, caller)
        const page = await model.list(caller, { ...query, limit: listLimit(args.first, 'first'), cursor: args.after as string | null | undefined ?? undefined, fields: fieldsFor(nodes, info) }, { cursors: true, readsAs })
        const shown = await queried(ctx, page.data, asked(info, nodes), readsAs)
        const edges = page.data.map((_row, at) => ({ cursor: page.cursors?.[at] as string, node: shown[at] }))
        return { edges, pageInfo: { hasNextPage: 'pagination' in page && page.pagination.hasMore, endCursor: edges.at(-1)?.cursor ?? null } }
      }
    }
    // A write whose rule is `false` has no mutation.
    const { create, update, delete: remove } = resource.auth
    const under = resource.under?.key
    if (create !== false) {
      Mutation[names.create] = async (_root: unknown, args: Args, ctx: Context, info: GraphQLResolveInfo) => {
        const caller = await callerFor(ctx, create)
        // A create of its own takes its input, nested objects and lists included.
        const values = resource.create === undefined ? asColumns(args.input as Args) : asBody(resource.schemas.create, args.input, 'input') as Row
        // Under a parent, the input names it (`postId`), as the REST path does.
        const parent = under === undefined ? undefined : values[under] as Key
        if (under !== undefined) delete values[under]
        const input = checkInput<Row>(resource.schemas.create, values)
        // The same attempt limits as the REST create.
        const limit = resource.createLimit
        if (limit !== undefined && ctx.app.hasDecorator('limitAttempts')) await ctx.app.limitAttempts(ctx.reply.request, ctx.reply, limit.kind, limit.account(input))
        const row = await model.create(caller, input, { parent })
        // Answered whole, field rules or not: its caller wrote it.
        const [shown] = await answered(ctx, [{ ...row }], asked(info))
        return shown === undefined ? null : answeredToWriter(shown)
      }
    }
    if (resource.bulk.create) {
      Mutation[names.createMany] = async (_root: unknown, args: Args, ctx: Context, info: GraphQLResolveInfo) => {
        const caller = await callerFor(ctx, create as AccessRule)
        const given = args.inputs as Args[]
        let parent: Key | undefined
        const inputs = given.map((item, index) => {
          try {
            const values = resource.create === undefined ? asColumns(item) : asBody(resource.schemas.create, item, 'input') as Row
            // Under a parent, each input names it (`postId`): one parent per batch, as REST's path gives.
            if (under !== undefined) {
              if (parent !== undefined && values[under] !== parent) throw badRequest(`every input names the same ${camelCase(under)}`, camelCase(under))
              parent = values[under] as Key
              delete values[under]
            }
            return values
          } catch (error) {
            throw itemError(index, error)
          }
        })
        // The same attempt limits as the REST create, once for each input.
        const limit = resource.createLimit
        if (limit !== undefined && ctx.app.hasDecorator('limitAttempts')) {
          for (const [index, input] of inputs.entries()) await asItem(index, async () => { await ctx.app.limitAttempts(ctx.reply.request, ctx.reply, limit.kind, limit.account(checkInput<Row>(resource.schemas.create, input))) })
        }
        const rows = await model.createMany(caller, inputs, { parent })
        // Answered whole, field rules or not: their caller wrote them.
        return (await answered(ctx, rows.map((row) => ({ ...row })), asked(info))).map(answeredToWriter)
      }
    }
    // A change or deletion by filter: the filters as the list's arguments have them, checked by the served resource.
    const whereOf = (args: Args): Row => translatedFilters(args.where as Args, resource.filters.map(({ name }) => name))
    const bulkChange = ({ count, ids }: BulkResult) => ({ count, ids: ids.map(String) })
    if (resource.bulk.update !== false) {
      const rule = resource.bulk.update
      Mutation[names.updateMany] = async (_root: unknown, args: Args, ctx: Context) =>
        bulkChange(await model.updateWhere(await callerFor(ctx, rule), whereOf(args), checkInput<Row>(resource.schemas.patch, asColumns(args.input as Args))))
    }
    if (resource.bulk.delete !== false) {
      const rule = resource.bulk.delete
      Mutation[names.removeMany] = async (_root: unknown, args: Args, ctx: Context) =>
        bulkChange(await model.removeWhere(await callerFor(ctx, rule), whereOf(args)))
    }
    if (update !== false) {
      Mutation[names.update] = async (_root: unknown, args: Args, ctx: Context, info: GraphQLResolveInfo) => {
        const caller = await callerFor(ctx, update)
        const input = checkInput<Row>(resource.schemas.patch, asColumns(args.input as Args))
        const row = await model.update(caller, parseKey(resource.keyType, args[names.key], names.key), input)
        if (row === undefined) throw notFound(resource.singularOf ?? resource.name)
        return (await answered(ctx, [{ ...row }], asked(info)))[0]
      }
    }
    if (remove !== false) {
      Mutation[names.remove] = async (_root: unknown, args: Args, ctx: Context) => {
        return await model.remove(await callerFor(ctx, remove), parseKey(resource.keyType, args.id, 'id')) !== undefined
      }
    }
    for (const [name, action] of Object.entries(resource.actions ?? {})) {
      const inputFields = Object.entries(action.input?.properties ?? {})
      const fieldOf = new Map(inputFields.map(([field]) => [camelCase(field), field]))
      // An `ID` input field (`…_id`) comes as text, and the input schema wants the integer.
      const ids = new Map(inputFields.filter(([field, schema]) => scalarOf(resource, field, schema) === 'ID').map(([field, schema]) => [field, idTypeOf(schema)]))
      Mutation[actionNames(resource, name).mutation] = async (_root: unknown, args: Args, ctx: Context, info: GraphQLResolveInfo) => {
        const caller = await callerFor(ctx, action.auth)
        const given = Object.fromEntries(Object.entries(args.input as Args ?? {}).map(([field, value]) => {
          const column = fieldOf.get(field) ?? field
          const type = ids.get(column)
          return [column, type !== undefined && value !== null ? parseKey(type, value, field) : value]
        }))
        const input = action.input === undefined ? {} : checkInput<Row>(action.input, given)
        const row = await model.act(caller, name, parseKey(resource.keyType, args[names.key], names.key), input)
        if (row === undefined) throw notFound(resource.singularOf ?? resource.name)
        return (await answered(ctx, [{ ...row }], asked(info)))[0]
      }
    }
    // `linkTaskWatcher`, `unlinkTaskWatcher` and the subscriptions of their events.
    if (!singular) addLinkResolvers(resource, resources, model, answers, Mutation, Subscription)
    for (const { subscription, require } of resource.events) {
      // A required argument is given (GraphQL checks it), an ID as text.
      const requiredValues = (args: Args): Array<[string, unknown]> => require.map((field) => {
        const value = args[camelCase(field)]
        return [field, idColumns.has(field) ? parseId(field, value, camelCase(field)) : value]
      })
      Subscription[subscription] = {
        subscribe: async (_root: unknown, args: Args, ctx: Context) => subscriptionStep(async () => {
          const hears = model.hearing(await reader(ctx), [...requiredValues(args), ...subscriberFilters(args)])
          const events = await ctx.pubsub.subscribe<ResourceEventPayload>(subscription)
          return only(events, (payload) => hears(eventRow(resource, payload)))
        }),
        // One answer per event and selection, shared by its subscribers.
        resolve: async (payload: ResourceEventPayload, _args: Args, ctx: Context, info: GraphQLResolveInfo) =>
          // Subscribers were signed in to subscribe, and their sockets close with their tokens: the shared
          // answer does not depend on the first subscriber's token (nor shows what owner rules keep to one).
          answerOnce(payload, info, async () => (await answered(ctx, [{ ...eventRow(resource, payload) } as PageRow], asked(info), async () => undefined))[0])
      }
    }
  }
  return (Object.keys(Subscription).length === 0 ? { ...types, Query, Mutation } : { ...types, Query, Mutation, Subscription }) as IResolvers<unknown, Context>
}
