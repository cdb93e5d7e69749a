import { GraphQLError, GraphQLScalarType, Kind } from 'graphql'
import type { IResolvers } from 'mercurius'
import { isoString } from '../db/timestamps.js'
import type { TandemGraphqlContext } from './context.js'

type Context = TandemGraphqlContext
type Args = Record<string, unknown>

/**
 * `DateTime`: a Date (or an ISO string from a JSON event) out, an ISO-8601 string in, handed on as the
 * instant's ISO string in UTC (the representation's `format: 'date-time'` is a string: a Date was refused).
 */
export const DateTime = new GraphQLScalarType<string, string>({
  name: 'DateTime',
  description: 'An instant, written as an ISO-8601 string in UTC.',
  serialize (value) {
    const date = value instanceof Date ? value : new Date(value as string)
    if (Number.isNaN(date.getTime())) throw new TypeError('DateTime cannot represent an invalid date')
    return isoString(date)
  },
  parseValue (value) {
    const date = typeof value === 'string' ? new Date(value) : new Date(Number.NaN)
    if (Number.isNaN(date.getTime())) throw new GraphQLError('DateTime must be an ISO-8601 string')
    return date.toISOString()
  },
  parseLiteral (ast) {
    const date = ast.kind === Kind.STRING ? new Date(ast.value) : new Date(Number.NaN)
    if (Number.isNaN(date.getTime())) throw new GraphQLError('DateTime must be an ISO-8601 string')
    return date.toISOString()
  }
})

const CALENDAR_DAY = /^(\d{4})-(\d{2})-(\d{2})$/

/** `text` as a calendar day (`2027-02-20`), or undefined when it is none (`2027-02-30`, another form). */
function calendarDay (text: unknown): string | undefined {
  if (typeof text !== 'string') return undefined
  const match = CALENDAR_DAY.exec(text)
  if (match === null) return undefined
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day ? text : undefined
}

/**
 * `Date`: a calendar day as an ISO-8601 date (`2027-02-20`), in and out; the same day whatever the
 * server's time zone. A `date` column is read as its text (db/timestamps.ts); a Date a host's code
 * gives is its UTC day.
 */
export const CalendarDate = new GraphQLScalarType<string, string>({
  name: 'Date',
  description: 'A calendar day, written as an ISO-8601 date.',
  serialize (value) {
    const day = value instanceof Date ? (Number.isNaN(value.getTime()) ? undefined : value.toISOString().slice(0, 10)) : calendarDay(value)
    if (day === undefined) throw new TypeError('Date cannot represent a value that is not a calendar day')
    return day
  },
  parseValue (value) {
    const day = calendarDay(value)
    if (day === undefined) throw new GraphQLError('Date must be an ISO-8601 date (YYYY-MM-DD)')
    return day
  },
  parseLiteral (ast) {
    const day = ast.kind === Kind.STRING ? calendarDay(ast.value) : undefined
    if (day === undefined) throw new GraphQLError('Date must be an ISO-8601 date (YYYY-MM-DD)')
    return day
  }
})

/**
 * What the query style has besides the declared resources (./declared.ts): the `DateTime` and `Date` scalars and
 * `login`, which exchanges a password for an access token under the same limits as `POST /auth/login`.
 */
export function resolvers (): IResolvers<unknown, Context> {
  return {
    DateTime,
    Date: CalendarDate,
    Mutation: {
      async login (_root, args: Args, ctx: Context) {
        // The same brute-force limits as POST /auth/login, per IP and per account.
        if (ctx.app.hasDecorator('limitLogin')) await ctx.app.limitLogin(ctx.reply.request, ctx.reply, String(args.email))
        return ctx.app.accessTokens.login(args.email as string, args.password as string, args.deviceToken as string | null | undefined ?? undefined)
      }
    }
  }
}
