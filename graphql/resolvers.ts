import { GraphQLError, GraphQLScalarType, Kind } from 'graphql'
import type { IResolvers } from 'mercurius'
import type { TandemGraphqlContext } from './context.js'

type Context = TandemGraphqlContext
type Args = Record<string, unknown>

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
 * What the query style has besides the declared resources (./declared.ts): the `DateTime` scalar and
 * `login`, which exchanges a password for an access token under the same limits as `POST /auth/login`.
 */
export function resolvers (): IResolvers<unknown, Context> {
  return {
    DateTime,
    Mutation: {
      async login (_root, args: Args, ctx: Context) {
        // The same brute-force limits as POST /auth/login, per IP and per account.
        if (ctx.app.hasDecorator('limitLogin')) await ctx.app.limitLogin(ctx.reply.request, ctx.reply, String(args.email))
        return ctx.app.accessTokens.login(args.email as string, args.password as string, args.deviceToken as string | null | undefined ?? undefined)
      }
    }
  }
}
