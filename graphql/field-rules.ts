// Field read rules in GraphQL: a resolver on each field that has one, so that every object of the
// type is shown as its caller may see it, however it was reached (a root field, a relation at any
// depth, a mutation's answer), and so that a subscription's answer, resolved once per selection and
// shared by its subscribers (./event-answers.ts), is shown to each subscriber as their own rule says.
import type { IFieldResolver } from 'mercurius'
import { isAnswerToWriter, mayReadField } from '../rules/field-rules.js'
import type { FieldRules } from '../schema/resource.js'
import { camelCase } from '../schema/resource-sdl.js'
import type { TandemGraphqlContext } from './context.js'

type Parent = Record<string, unknown>

/**
 * The resolvers of `type`'s fields with a read rule: each answers its value to a caller the rule
 * admits (the object's owner field, `id` of a user, names the owner), else null. A create's answer to
 * its own caller is shown whole.
 */
export function fieldRuleResolvers (rules: FieldRules | undefined): Record<string, IFieldResolver<Parent, TandemGraphqlContext>> {
  if (rules === undefined) return {}
  const owner = camelCase(rules.owner)
  return Object.fromEntries(Object.entries(rules.fields).map(([column, rule]) => {
    const field = camelCase(column)
    const resolve: IFieldResolver<Parent, TandemGraphqlContext> = async (parent, _args, ctx) => {
      const value = parent[field]
      if (value === undefined || value === null) return null
      if (isAnswerToWriter(parent)) return value
      // Without a valid token (a subscriber whose token has just ended, say) the field is hidden.
      const caller = await ctx.viewer().catch(() => undefined)
      return mayReadField(rule, caller, parent[owner]) ? value : null
    }
    return [field, resolve]
  }))
}
