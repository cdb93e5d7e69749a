import { GraphQLError, getNamedType, isIntrospectionType, type ValidationContext, type ValidationRule } from 'graphql'
import { codes } from './errors.js'

/**
 * Refuses `__schema` and `__type` (a field whose type is one of introspection's, as graphql-js's
 * NoSchemaIntrospectionCustomRule finds them, reported once: not again for the fields below) with
 * `extensions.code: INTROSPECTION_DISABLED`; `__typename` stays, clients need it. For servers
 * whose schema is not for everyone to read.
 * @example validate(schema, document, [...specifiedRules, introspectionDisabled])
 */
export const introspectionDisabled: ValidationRule = (context: ValidationContext) => ({
  Field (node) {
    const type = getNamedType(context.getType())
    const parent = context.getParentType()
    if (type !== undefined && type !== null && isIntrospectionType(type) && (parent === null || parent === undefined || !isIntrospectionType(parent))) {
      context.reportError(new GraphQLError(`introspection is off on this server ("${node.name.value}"); it is turned on by graphqlIntrospection (GRAPHQL_INTROSPECTION)`, {
        nodes: node,
        extensions: { code: codes.introspectionDisabled }
      }))
    }
  }
})
