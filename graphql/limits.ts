import {
  GraphQLError, Kind, getNamedType, getNullableType, isListType, isObjectType, isInterfaceType,
  type FieldNode, type GraphQLField, type GraphQLNamedType, type OperationDefinitionNode,
  type SelectionSetNode, type ValidationContext, type ValidationRule, type ValueNode
} from 'graphql'
import { codes } from './errors.js'

/** Items a list field may return when it has no `limit` (or `first`) argument. */
export const DEFAULT_LIST_SIZE = 20
/** The largest `limit` (or `first`) a list field takes. */
export const MAX_LIST_SIZE = 100
/**
 * Introspection (`__schema`, `__type`) reads the in-memory schema, not the database: it is
 * exempt from the depth limit and its lists count once, but it may not nest deeper than this
 * (GraphiQL's introspection query needs 13 levels).
 */
export const MAX_INTROSPECTION_DEPTH = 15

const isIntrospection = (field: FieldNode): boolean => field.name.value.startsWith('__')

/**
 * Rejects operations nested deeper than `maximum` fields (fragments inlined, introspection
 * bounded apart), with `extensions.code: DEPTH_LIMIT_EXCEEDED`.
 * @example validate(schema, document, [...specifiedRules, depthLimit(8)])
 */
export function depthLimit (maximum: number): ValidationRule {
  return (context: ValidationContext) => {
    const fragments = new Map<string, number>()
    const depthOf = (set: SelectionSetNode, visiting: Set<string>): number => {
      let deepest = 0
      for (const selection of set.selections) {
        let depth: number
        if (selection.kind === Kind.FIELD) {
          depth = 1 + (selection.selectionSet === undefined ? 0 : depthOf(selection.selectionSet, visiting))
          if (isIntrospection(selection)) {
            if (depth > MAX_INTROSPECTION_DEPTH) {
              context.reportError(new GraphQLError(`introspection is ${depth} levels deep; at most ${MAX_INTROSPECTION_DEPTH} are allowed`, { nodes: [selection], extensions: { code: codes.depthLimit } }))
            }
            continue
          }
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          depth = depthOf(selection.selectionSet, visiting)
        } else {
          const name = selection.name.value
          const known = fragments.get(name)
          if (known !== undefined) {
            depth = known
          } else {
            const fragment = context.getFragment(name)
            // Unknown and cyclic fragments are reported by the standard rules.
            if (fragment === undefined || fragment === null || visiting.has(name)) continue
            visiting.add(name)
            depth = depthOf(fragment.selectionSet, visiting)
            visiting.delete(name)
            fragments.set(name, depth)
          }
        }
        if (depth > deepest) deepest = depth
      }
      return deepest
    }
    return {
      OperationDefinition (operation) {
        const depth = depthOf(operation.selectionSet, new Set())
        if (depth > maximum) {
          context.reportError(new GraphQLError(`the operation is ${depth} levels deep; at most ${maximum} are allowed`, {
            nodes: [operation],
            extensions: { code: codes.depthLimit, depth, maximum }
          }))
        }
      }
    }
  }
}

export interface ComplexityOptions {
  /** The highest cost an operation may have. @example 10000 */
  maximum: number
  /**
   * The request's variables, to read `limit: $n`. Undefined when they are not known (a
   * subscription's document is checked before its variables are seen): such a limit then
   * counts as its default value, or else as the maximum.
   */
  variables?: Record<string, unknown> | null | undefined
}

/**
 * The cost model of CONTRACT §6: every field costs 1, and a list field's selection counts once
 * for each item it may return: its `limit` argument (or `first` on a connection), else 20.
 * Fragments and aliases are counted where they are used (each fragment's cost is computed once).
 * An out-of-range `limit`/`first` is reported as BAD_USER_INPUT, a too costly operation as
 * COMPLEXITY_LIMIT_EXCEEDED.
 * @example validate(schema, document, [complexityLimit({ maximum: 10000, variables })])
 */
export function complexityLimit (options: ComplexityOptions): ValidationRule {
  return (context: ValidationContext) => ({
    OperationDefinition (operation) {
      const root = context.getSchema().getRootType(operation.operation)
      if (root === undefined || root === null) return
      const cost = new CostCounter(context, operation, options.variables).selectionSet(operation.selectionSet, root, false)
      if (cost > options.maximum) {
        context.reportError(new GraphQLError(`the operation costs ${Number.isFinite(cost) ? cost : 'too much'}; at most ${options.maximum} is allowed`, {
          nodes: [operation],
          extensions: { code: codes.complexityLimit, cost: Number.isFinite(cost) ? cost : null, maximum: options.maximum }
        }))
      }
    }
  })
}

class CostCounter {
  private readonly fragments = new Map<string, number>()
  private readonly visiting = new Set<string>()
  private readonly reported = new Set<ValueNode>()

  constructor (
    private readonly context: ValidationContext,
    private readonly operation: OperationDefinitionNode,
    private readonly variables: Record<string, unknown> | null | undefined
  ) {}

  /** `flat`: inside introspection, where lists count once. */
  selectionSet (set: SelectionSetNode, parent: GraphQLNamedType, flat: boolean): number {
    let total = 0
    for (const selection of set.selections) {
      if (selection.kind === Kind.FIELD) {
        total += this.field(selection, parent, flat)
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        const type = selection.typeCondition === undefined ? parent : this.context.getSchema().getType(selection.typeCondition.name.value)
        if (type !== undefined && type !== null) total += this.selectionSet(selection.selectionSet, type, flat)
      } else {
        const name = selection.name.value
        const key = `${flat ? 'flat:' : ''}${name}`
        let cost = this.fragments.get(key)
        if (cost === undefined) {
          const fragment = this.context.getFragment(name)
          const type = fragment === undefined || fragment === null ? undefined : this.context.getSchema().getType(fragment.typeCondition.name.value)
          if (fragment === undefined || fragment === null || type === undefined || type === null || this.visiting.has(name)) continue
          this.visiting.add(name)
          cost = this.selectionSet(fragment.selectionSet, type, flat)
          this.visiting.delete(name)
          this.fragments.set(key, cost)
        }
        total += cost
      }
    }
    return total
  }

  private field (node: FieldNode, parent: GraphQLNamedType, flat: boolean): number {
    if (node.selectionSet === undefined) return 1
    const definition = (isObjectType(parent) || isInterfaceType(parent)) ? parent.getFields()[node.name.value] : undefined
    if (definition === undefined) return 1
    const inner = flat || isIntrospection(node)
    const children = this.selectionSet(node.selectionSet, getNamedType(definition.type), inner)
    return 1 + (inner ? 1 : this.multiplier(node, definition, parent)) * children
  }

  private multiplier (node: FieldNode, definition: GraphQLField<unknown, unknown>, parent: GraphQLNamedType): number {
    const sizeArgument = definition.args.find((arg) => arg.name === 'limit' || arg.name === 'first')
    if (sizeArgument !== undefined) return this.size(node, sizeArgument.name)
    if (!isListType(getNullableType(definition.type))) return 1
    // The lists of a connection (its edges) are sized by the connection's own `first`.
    if (parent.name.endsWith('Connection')) return 1
    return DEFAULT_LIST_SIZE
  }

  private size (node: FieldNode, name: string): number {
    const argument = node.arguments?.find((arg) => arg.name.value === name)
    if (argument === undefined) return DEFAULT_LIST_SIZE
    const value = this.valueOf(argument.value)
    if (value === undefined || value === null) return DEFAULT_LIST_SIZE
    if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > MAX_LIST_SIZE) {
      if (!this.reported.has(argument.value)) {
        this.reported.add(argument.value)
        this.context.reportError(new GraphQLError(`${name} must be an integer from 1 to ${MAX_LIST_SIZE}`, {
          nodes: [argument],
          extensions: { code: codes.badUserInput, field: name }
        }))
      }
      return MAX_LIST_SIZE
    }
    return value as number
  }

  /** A literal, or the value of a variable: as sent, else its default; unknown → the maximum. */
  private valueOf (value: ValueNode): unknown {
    if (value.kind === Kind.INT) return Number(value.value)
    if (value.kind === Kind.NULL) return null
    if (value.kind !== Kind.VARIABLE) return Number.NaN
    const name = value.name.value
    const sent = this.variables?.[name]
    if (sent !== undefined) return sent
    const definition = this.operation.variableDefinitions?.find((v) => v.variable.name.value === name)
    if (definition?.defaultValue !== undefined) return this.valueOf(definition.defaultValue)
    return this.variables === undefined ? MAX_LIST_SIZE : undefined
  }
}

export interface MutationLimitOptions {
  /** Root fields one mutation may have, aliases included. @example 10 */
  maxFields: number
  /** Root fields that may appear at most once per operation (password hashing and checking). @example ['login', 'createUser'] */
  once: readonly string[]
}

/**
 * Keeps one request from doing the work of many: aliases would otherwise let one mutation try
 * hundreds of passwords (`a1: login(…) a2: login(…) …`) or write hundreds of rows under one
 * rate-limit count. Reported as COMPLEXITY_LIMIT_EXCEEDED.
 * @example validate(schema, document, [mutationLimit({ maxFields: 10, once: ['login'] })])
 */
export function mutationLimit (options: MutationLimitOptions): ValidationRule {
  return (context: ValidationContext) => ({
    OperationDefinition (operation) {
      if (operation.operation !== 'mutation') return
      const counts = new Map<string, number>()
      let total = 0
      const visit = (set: SelectionSetNode, visiting: Set<string>): void => {
        for (const selection of set.selections) {
          if (selection.kind === Kind.FIELD) {
            if (isIntrospection(selection)) continue
            total++
            counts.set(selection.name.value, (counts.get(selection.name.value) ?? 0) + 1)
          } else if (selection.kind === Kind.INLINE_FRAGMENT) {
            visit(selection.selectionSet, visiting)
          } else if (!visiting.has(selection.name.value)) {
            const fragment = context.getFragment(selection.name.value)
            if (fragment === undefined || fragment === null) continue
            visiting.add(selection.name.value)
            visit(fragment.selectionSet, visiting)
            visiting.delete(selection.name.value)
          }
        }
      }
      visit(operation.selectionSet, new Set())
      const report = (message: string) => context.reportError(new GraphQLError(message, { nodes: [operation], extensions: { code: codes.complexityLimit } }))
      if (total > options.maxFields) report(`a mutation may have at most ${options.maxFields} fields; this one has ${total}`)
      for (const name of options.once) {
        if ((counts.get(name) ?? 0) > 1) report(`${name} may be asked once per operation`)
      }
    }
  })
}
