import {
  getNamedType, getVariableValues, isEnumType, isNonNullType, isObjectType, Kind, valueFromASTUntyped,
  type DocumentNode, type FieldNode, type FragmentDefinitionNode, type GraphQLObjectType, type GraphQLOutputType, type GraphQLSchema,
  type OperationDefinitionNode, type SelectionSetNode
} from 'graphql'
import type { JsonFormat, JsonObject, NestedRelation } from '../db/relations.js'
import type { AccessUser } from '../plugins/auth.js'
import { callerNeeded, readableOwner, readerOf } from '../rules/resource.js'
import type { ServedResource } from '../rules/served-resource.js'
import { keyTypeOf } from '../schema/keys.js'
import { nonNull, type Resource } from '../schema/resource.js'
import { graphqlNames } from '../schema/resource-sdl.js'
import type { TandemGraphqlContext } from './context.js'
import { listLimit } from './inputs.js'
import type { PlannedType, PlannedTypes } from './planned-types.js'

type Variables = Readonly<Record<string, unknown>>
type Fragments = Readonly<Record<string, FragmentDefinitionNode>>

/** Viewers whose plans of one document are kept; past them, the document's plans start again. */
const PLANS_PER_DOCUMENT = 256

/** A root list field answered from the database alone: its resource, and its rules. */
interface RootList {
  resource: Resource
  served: ServedResource
  type: PlannedType
}

/** What a walk of one operation knows: its fragments, its variables, and who asks (undefined: nobody signed in). */
interface Walk {
  fragments: Fragments
  variables: Variables
  viewer: AccessUser | undefined
}

/**
 * The fields `selectionSet` selects (through fragments), by response key in the order GraphQL answers
 * them; undefined when a directive (`@skip`, `@include`) decides what is shown.
 */
function byResponseKey (nodes: readonly FieldNode[] | readonly OperationDefinitionNode[], fragments: Fragments): Map<string, FieldNode[]> | undefined {
  const fields = new Map<string, FieldNode[]>()
  const seen = new Set<string>()
  const collect = (set: SelectionSetNode | undefined): boolean => {
    for (const selection of set?.selections ?? []) {
      if ((selection.directives?.length ?? 0) > 0) return false
      if (selection.kind === Kind.FIELD) {
        const key = selection.alias?.value ?? selection.name.value
        const known = fields.get(key)
        if (known === undefined) fields.set(key, [selection])
        else known.push(selection)
      } else if (selection.kind === Kind.INLINE_FRAGMENT) {
        if (!collect(selection.selectionSet)) return false
      } else if (!seen.has(selection.name.value)) {
        seen.add(selection.name.value)
        const fragment = fragments[selection.name.value]
        if (fragment === undefined || (fragment.directives?.length ?? 0) > 0 || !collect(fragment.selectionSet)) return false
      }
    }
    return true
  }
  for (const node of nodes) if (!collect(node.selectionSet)) return undefined
  return fields
}

/** The arguments a field node gives, by name (variables replaced); undefined when it gives one not in `allowed`. */
function argumentsOf (nodes: readonly FieldNode[], allowed: readonly string[], variables: Variables): Record<string, unknown> | undefined {
  const args: Record<string, unknown> = {}
  // The nodes of one response key give the same arguments: validation checks it.
  for (const argument of nodes[0]?.arguments ?? []) {
    if (!allowed.includes(argument.name.value)) return undefined
    args[argument.name.value] = valueFromASTUntyped(argument.value, variables)
  }
  return args
}

/**
 * How a scalar field's value is written as GraphQL serializes it: `ID` as a string, the built-in scalars,
 * `Date` (a calendar day's text) and enums whose values are their names as PostgreSQL writes them;
 * undefined for any other (a `DateTime`, a `Float`, a host's scalar), which GraphQL itself serializes.
 */
function formatOf (type: GraphQLOutputType): JsonFormat | undefined {
  const named = getNamedType(type)
  if (named.name === 'ID') return 'text'
  if (named.name === 'Int' || named.name === 'String' || named.name === 'Boolean' || named.name === 'Date') return 'json'
  if (isEnumType(named) && named.getValues().every((value) => value.value === value.name)) return 'json'
  return undefined
}

/**
 * Whether `column` of the declared resource is a bigint (`Type.String({ format: 'int64' })`): a `String`
 * in GraphQL and its decimal text in REST, which PostgreSQL's JSON would write as a number.
 */
function isBigint (resource: Resource | undefined, column: string): boolean {
  const schema = resource?.representation.properties[column]
  return schema !== undefined && keyTypeOf(nonNull(schema)) === 'bigint'
}

/**
 * The JSON object that the selection `nodes` of the planned type `type` shows, or undefined when a field
 * of it needs GraphQL's own execution: a field with a resolver (a field read rule, a host's), a loaded
 * field, a scalar serialized in JavaScript, an argument other than a list's `limit`, a single relation
 * that may not be null but that a read rule may hide, or a relation that needs a caller when there is none.
 */
function objectOf (types: PlannedTypes, type: PlannedType, gqlType: GraphQLObjectType, nodes: readonly FieldNode[], walk: Walk): JsonObject | undefined {
  const fields = byResponseKey(nodes, walk.fragments)
  if (fields === undefined) return undefined
  const columns: Array<readonly [string, string, JsonFormat]> = []
  const constants: Array<readonly [string, string]> = []
  const below: NestedRelation[] = []
  const gqlFields = gqlType.getFields()
  for (const [key, fieldNodes] of fields) {
    const name = (fieldNodes[0] as FieldNode).name.value
    if (name === '__typename') {
      constants.push([key, JSON.stringify(gqlType.name)])
      continue
    }
    const field = gqlFields[name]
    if (field === undefined || field.resolve !== undefined || type.loaded.has(name)) return undefined
    const relation = type.relations.get(name)
    if (relation === undefined) {
      const column = type.columnOf.get(name)
      const format = formatOf(field.type)
      if (column === undefined || format === undefined || type.fieldRules?.fields[column] !== undefined) return undefined
      if (argumentsOf(fieldNodes, [], walk.variables) === undefined) return undefined
      columns.push([key, column, isBigint(type.resource, column) ? 'text' : format])
      continue
    }
    const target = types.get(relation.type)
    const targetType = getNamedType(field.type)
    if (target === undefined || !isObjectType(targetType)) return undefined
    // A row the read rule hides would be a null where GraphQL reports an error.
    if (!relation.link.list && isNonNullType(field.type) && relation.narrow !== undefined) return undefined
    if (relation.needsCaller && walk.viewer === undefined) return undefined
    const args = argumentsOf(fieldNodes, relation.link.list ? ['limit'] : [], walk.variables)
    if (args === undefined) return undefined
    const inner = objectOf(types, target, targetType, fieldNodes, walk)
    if (inner === undefined) return undefined
    const owner = relation.narrow === undefined ? undefined : readableOwner(relation.narrow.resource, walk.viewer)
    below.push({
      ...inner,
      name: key,
      link: relation.link,
      limit: relation.link.list ? listLimit(args.limit) : undefined,
      ...owner === undefined || relation.narrow === undefined ? {} : { narrow: { owners: relation.narrow.owners, value: owner } }
    })
  }
  return { columns, constants, order: [...fields.keys()], below }
}

/** The operation of `document` to run: its only one (with several, the request's name decides, which this cannot see). */
function onlyOperation (document: DocumentNode): OperationDefinitionNode | undefined {
  const operations = document.definitions.filter((definition) => definition.kind === Kind.OPERATION_DEFINITION)
  return operations.length === 1 ? operations[0] : undefined
}

/**
 * Queries answered by the database alone. A query whose every field is a declared resource's plain list
 * (`users(limit, offset)`) showing columns and relations, at any depth, is answered as the JSON text
 * PostgreSQL builds for it — one statement per root field, each under its served resource's rules
 * (its read rule, owner narrowing, and every relation's read rule below) — and sent as it comes: no rows
 * parsed in JavaScript, no GraphQL execution, no serialization. Anything else (a field with a resolver
 * or a read rule, a connection, filters, a scalar GraphQL writes itself, a directive, a caller the
 * rules refuse) is undefined: GraphQL executes it as any query, with the same answer or the error.
 * `resolvers` are the declared root fields' own: one the host resolves otherwise is executed.
 * See PERFORMANCE-DECISIONS.md, 'Queries answered by the database alone'.
 */
export function compiledAnswers (types: PlannedTypes, resources: readonly Resource[], served: (resource: Resource) => ServedResource, resolvers: Readonly<Record<string, unknown>>) {
  const lists = new Map<string, RootList>()
  for (const resource of resources) {
    const type = types.get(graphqlNames(resource).type)
    if (resource.singularOf !== undefined || type === undefined) continue
    lists.set(graphqlNames(resource).list, { resource, served: served(resource), type })
  }

  /** What one root field answers: a constant (`__typename`), or a list's rows as `object`, read as `caller`. */
  type Root = { key: string, json: string } | { key: string, list: RootList, caller: AccessUser | undefined, readsAs: number | undefined, object: JsonObject, limit: number, offset: number | undefined }

  /** The roots of `operation` as `viewer` asks them, or undefined when GraphQL must execute it. */
  function planOf (query: GraphQLObjectType, operation: OperationDefinitionNode, fragments: Fragments, variables: Variables, viewer: AccessUser | undefined): Root[] | undefined {
    const roots = byResponseKey([operation], fragments)
    if (roots === undefined) return undefined
    const walk: Walk = { fragments, variables, viewer }
    const plan: Root[] = []
    for (const [key, nodes] of roots) {
      const name = (nodes[0] as FieldNode).name.value
      if (name === '__typename') {
        plan.push({ key, json: JSON.stringify(query.name) })
        continue
      }
      const list = lists.get(name)
      const field = query.getFields()[name]
      const returned = field === undefined ? undefined : getNamedType(field.type)
      // A list whose resolver the host replaced (Mercurius's defineResolvers) answers as that resolver does.
      if (list === undefined || field?.resolve !== resolvers[name] || returned === undefined || !isObjectType(returned)) return undefined
      const args = argumentsOf(nodes, ['limit', 'offset'], variables)
      if (args === undefined) return undefined
      // The rules' caller, as the list's resolver has it: nobody on a public resource without field rules.
      // A read the rule refuses without a viewer is executed, for GraphQL's own error.
      if (callerNeeded(list.resource.auth.read) !== 'nobody' && viewer === undefined) return undefined
      const caller = readerOf(list.resource, viewer)
      const object = objectOf(types, list.type, returned, nodes, walk)
      const offset = args.offset ?? undefined
      if (object === undefined || (offset !== undefined && typeof offset !== 'number')) return undefined
      plan.push({ key, list, caller, readsAs: caller?.sub ?? viewer?.sub, object, limit: listLimit(args.limit), offset })
    }
    return plan
  }

  // A document without variables is planned once per viewer (the narrowing below depends on who they
  // are), a few hundred viewers a document at most; one with variables at every request.
  const plans = new WeakMap<DocumentNode, Map<string, Root[] | null>>()
  const viewerKey = (viewer: AccessUser | undefined): string => viewer === undefined ? '' : `${viewer.role}:${viewer.sub}`

  /**
   * The answer's text (`{"data":{…}}`) of `document`, or undefined when GraphQL must execute it
   * (an `operationName` the document's one operation does not have is GraphQL's error to give).
   */
  async function answer (schema: GraphQLSchema, document: DocumentNode, sent: Variables | undefined, context: Pick<TandemGraphqlContext, 'viewer'>, operationName?: unknown): Promise<string | undefined> {
    const operation = onlyOperation(document)
    const query = schema.getQueryType()
    if (operation === undefined || operation.operation !== 'query' || query == null) return undefined
    if (operationName != null && operationName !== operation.name?.value) return undefined
    // Memoized by the context: the resolvers of a query GraphQL executes after all reuse it.
    const viewer = await context.viewer().catch(() => undefined)
    const fixed = (operation.variableDefinitions?.length ?? 0) === 0
    let known = fixed ? plans.get(document) : undefined
    let plan = known?.get(viewerKey(viewer))
    if (plan === undefined) {
      const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], { ...sent })
      if (coerced.coerced === undefined) return undefined
      const fragments: Record<string, FragmentDefinitionNode> = {}
      for (const definition of document.definitions) if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition
      plan = planOf(query, operation, fragments, coerced.coerced, viewer) ?? null
      if (fixed) {
        if (known === undefined || known.size >= PLANS_PER_DOCUMENT) plans.set(document, known = new Map())
        known.set(viewerKey(viewer), plan)
      }
    }
    if (plan === null) return undefined
    const texts = await Promise.all(plan.map(async (root) => 'json' in root
      ? root.json
      : await root.list.served.rowsAsJson(root.caller, { limit: root.limit, offset: root.offset }, root.object, { readsAs: root.readsAs })))
    if (texts.some((text) => text === undefined)) return undefined
    return `{"data":{${plan.map((root, at) => `${JSON.stringify(root.key)}:${texts[at] as string}`).join(',')}}}`
  }
  return { answer }
}
