import { GraphQLError, GraphQLScalarType, Kind, type GraphQLResolveInfo as Info } from 'graphql'
import type { IResolvers } from 'mercurius'
import { cursorAfterId } from '../db/pagination.js'
import { findUser, listUsers, userFilterFields, userListFilters, userRows, userSearchFields, type UserFilters } from '../db/users.js'
import { changeUser, removeUser, signUp, type AccountChanges } from '../rules/accounts.js'
import type { AccessUser } from '../plugins/auth.js'
import { answeredToWriter, narrowFilters } from '../rules/field-rules.js'
import { notFound } from '../schema/errors.js'
import { CreateUserBody, PatchUserBody, userFieldRules, UserListQuery } from '../schema/users.js'
import type { TandemGraphqlContext } from './context.js'
import { fieldRuleResolvers } from './field-rules.js'
import { checkInput, listLimit, parseId } from './inputs.js'
import type { RelationPlanner } from './relations.js'

type Context = TandemGraphqlContext
type Args = Record<string, unknown>
type Input = Record<string, unknown>

/**
 * The filters of `users` as `GET /users` takes them (checked by its schema, with its messages), narrowed
 * as the email's field rule asks: a filter or `q` on emails finds only the caller's own address unless
 * they read every one.
 */
function userFilters (args: Args, viewer: AccessUser): Record<string, unknown> {
  const given = Object.fromEntries(['email', 'name', 'q'].map((name) => [name, args[name] ?? undefined]))
  const filters = userListFilters(checkInput<UserFilters>(UserListQuery, given))
  narrowFilters(userFieldRules, viewer, filters, userFilterFields, userSearchFields)
  return filters
}

/** `DateTime`: a Date (or an ISO string from a JSON event) out, an ISO-8601 string in. */
export const DateTime = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  description: 'An instant, written as an ISO-8601 string in UTC.',
  serialize (value) {
    const date = value instanceof Date ? value : new Date(value as string)
    if (Number.isNaN(date.getTime())) throw new TypeError('DateTime cannot represent an invalid date')
    return date.toISOString()
  },
  parseValue (value) {
    const date = typeof value === 'string' ? new Date(value) : new Date(Number.NaN)
    if (Number.isNaN(date.getTime())) throw new GraphQLError('DateTime must be an ISO-8601 string')
    return date
  },
  parseLiteral (ast) {
    const date = ast.kind === Kind.STRING ? new Date(ast.value) : new Date(Number.NaN)
    if (Number.isNaN(date.getTime())) throw new GraphQLError('DateTime must be an ISO-8601 string')
    return date
  }
})

/**
 * The users' resolvers: root fields only. They check the caller as the resource style does, call
 * `db/`, and hand their answer to the relation engine (`planner`, ./relations.ts), which loads the
 * relations the query asks below them (one statement for all of them, whatever the number of
 * parents, each narrowed by its target's read rule) and gives rows their field names (`created_at`
 * → `createdAt`). The declared resources' root fields (./declared.ts) answer through the same
 * engine. `User.email` alone has a resolver: its field rule (`userFieldRules`).
 */
export function resolvers (planner: RelationPlanner): IResolvers<unknown, Context> {
  // Relations read as the caller.
  const loaded = async <T>(ctx: Context, info: Info, answer: T): Promise<T> =>
    planner.withRelations(ctx.app.db, info, answer, ctx.viewer)
  return {
    DateTime,
    User: fieldRuleResolvers(userFieldRules),
    Query: {
      async user (_root, args: Args, ctx: Context, info: Info) {
        await ctx.viewer()
        return loaded(ctx, info, await findUser(ctx.app.db, parseId(args.id, 'id')) ?? null)
      },
      async users (_root, args: Args, ctx: Context, info: Info) {
        const viewer = await ctx.viewer()
        const limit = args.limit as number | undefined ?? undefined
        const offset = args.offset as number | undefined ?? undefined
        return loaded(ctx, info, await userRows(ctx.app.db, { limit, offset }, userFilters(args, viewer)))
      },
      async usersConnection (_root, args: Args, ctx: Context, info: Info) {
        const viewer = await ctx.viewer()
        const secret = ctx.app.tandemConfig.jwtSecret
        const filters = userFilters(args, viewer)
        const params = { limit: listLimit(args.first, 'first'), cursor: args.after as string | undefined ?? undefined }
        const page = await listUsers(ctx.app.db, params, { secret }, (narrowed) => { Object.assign(narrowed, filters) })
        // The filters of `GET /users?…`, whose cursors these are.
        const edges = page.data.map((node) => ({ cursor: cursorAfterId({ secret, filters }, node.id), node }))
        const hasNextPage = 'pagination' in page && page.pagination.hasMore
        return loaded(ctx, info, { edges, pageInfo: { hasNextPage, endCursor: edges[edges.length - 1]?.cursor ?? null } })
      }
    },
    Mutation: {
      async createUser (_root, args: Args, ctx: Context, info: Info) {
        const input = checkInput<{ name: string, email: string, password?: string }>(CreateUserBody, args.input as Input)
        // The same per-address limits as POST /users.
        if (ctx.app.hasDecorator('limitAttempts')) await ctx.app.limitAttempts(ctx.reply.request, ctx.reply, 'signUp', input.email)
        // Its caller gave the email: the new account is answered whole.
        return answeredToWriter(await loaded(ctx, info, await signUp(ctx.app.db, input)))
      },
      async updateUser (_root, args: Args, ctx: Context, info: Info) {
        const viewer = await ctx.viewer()
        const input = checkInput<AccountChanges>(PatchUserBody, args.input as Input)
        const user = await changeUser(ctx.app, viewer, parseId(args.id, 'id'), input)
        if (user === undefined) throw notFound('user')
        return loaded(ctx, info, user)
      },
      async deleteUser (_root, args: Args, ctx: Context) {
        const viewer = await ctx.viewer()
        return removeUser(ctx.app, viewer, parseId(args.id, 'id'))
      },
      async login (_root, args: Args, ctx: Context) {
        // The same brute-force limits as POST /auth/login, per IP and per account.
        if (ctx.app.hasDecorator('limitLogin')) await ctx.app.limitLogin(ctx.reply.request, ctx.reply, String(args.email))
        return ctx.app.accessTokens.login(args.email as string, args.password as string, args.deviceToken as string | null | undefined ?? undefined)
      }
    }
  }
}
