import {
  getNamedType, getVariableValues, isObjectType, Kind, OperationTypeNode, valueFromASTUntyped,
  type DocumentNode, type FieldNode, type FragmentDefinitionNode, type GraphQLSchema, type GraphQLField, type OperationDefinitionNode, type GraphQLNamedType, type GraphQLResolveInfo
} from 'graphql'
import type { Db } from '../db/connect.js'
import { keyOfType, linkedRows, relationsAsJson, type Listing, type NestedRelation } from '../db/relations.js'
import type { Key } from '../schema/keys.js'
import type { AccessUser } from '../plugins/auth.js'
import { readableOwner } from '../rules/resource.js'
import type { Resource } from '../schema/resource.js'
import { loadedValues } from '../db/resource.js'
import { camelCase } from '../schema/resource-sdl.js'
import { listLimit } from './inputs.js'
import type { PlannedRelation, PlannedType, PlannedTypes } from './planned-types.js'
import { selectedColumns, selectedFields, type Fragments } from './selection.js'

type Row = Record<string, unknown>
type Variables = Readonly<Record<string, unknown>>

/**
 * Who asks, for relations whose targets only signed-in callers may read: called only when such a
 * relation is asked (it throws UNAUTHENTICATED without a caller). Undefined (a subscription's shared
 * answer) shows nothing of targets read by their owners only.
 */
export type Caller = () => Promise<AccessUser | undefined>

/**
 * The filters and order a nested list's arguments ask (`tasks(status: todo, orderBy: [DUE_ON_DESC])`)
 * of its target's rows, checked and narrowed for `viewer` by the target's served resource.
 */
export type ListingOf = (target: Resource, viewer: AccessUser | undefined, args: Readonly<Record<string, unknown>>) => Listing

/** A loaded field's value as GraphQL shows it: the keys of its objects in camelCase, at every depth. */
function camelCased (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelCased)
  if (value === null || typeof value !== 'object' || value instanceof Date) return value
  return Object.fromEntries(Object.entries(value).map(([key, inner]) => [camelCase(key), camelCased(inner)]))
}

// As the data layer keys what it found: a number for an integer key, text for the others.
const keyOf = (row: Row, relation: PlannedRelation): Key | undefined => keyOfType(relation.link.keyType, row[relation.link.by])

/** Columns the children always need: their id, and the key they are grouped by (a join table groups them itself). */
function alwaysOf ({ link }: PlannedRelation): readonly string[] {
  return link.through !== undefined || link.key === 'id' ? ['id'] : ['id', link.key]
}

/** `columns` of `type`, with the owner's column when one of them is hidden from all but their owner. */
function withOwner (type: PlannedType, columns: readonly string[]): readonly string[] {
  const rules = type.fieldRules
  if (rules === undefined || columns.includes(rules.owner) || !columns.some((column) => rules.fields[column] !== undefined)) return columns
  return type.columns.filter((column) => column === rules.owner || columns.includes(column))
}

/** What rows of `type` must read besides their shown fields: the columns their selected relations are found by. */
function keysOf (type: PlannedType, fields: ReadonlyMap<string, unknown>, always: readonly string[]): readonly string[] {
  const keys = [...always]
  for (const field of fields.keys()) {
    const relation = type.relations.get(field)
    if (relation !== undefined) keys.push(relation.link.by)
  }
  // Loaded fields are loaded by the rows' key once they are read.
  if (type.resource !== undefined && [...fields.keys()].some((field) => type.loaded.has(field))) keys.push(type.resource.key)
  return keys
}

/** One statement of a plan: a relation field at one `limit`, for the response keys that ask it so, and what to load below it. */
interface Fetch {
  field: string
  relation: PlannedRelation
  type: PlannedType
  /** The `limit` as asked (undefined: the default); checked when the plan runs. */
  limit: unknown
  /** A list's other arguments as asked (its target's filters, `orderBy`), by name; checked when the plan runs. */
  args: Readonly<Record<string, unknown>>
  responseKeys: string[]
  columns: readonly string[]
  /** Of those, the columns the answer shows (`columns` adds the keys rows are found by). */
  shown: readonly string[]
  /** The loaded fields selected, as [field, column]. */
  loaded: ReadonlyArray<readonly [string, string]>
  /** Other response keys ask the same field differently (another `limit`, or other limits below): answers go by response key. */
  perResponseKey: boolean
  below: Plan
}
type Plan = readonly Fetch[]

const NONE: readonly never[] = Object.freeze([])

function limitOf (node: FieldNode, variables: Variables): unknown {
  const argument = node.arguments?.find((arg) => arg.name.value === 'limit')
  return argument === undefined ? undefined : valueFromASTUntyped(argument.value, variables)
}

/** A list field's arguments but `limit` (its filters and `orderBy`), by name. */
function listArgsOf (node: FieldNode, variables: Variables): Record<string, unknown> {
  const args: Record<string, unknown> = {}
  for (const argument of node.arguments ?? []) if (argument.name.value !== 'limit') args[argument.name.value] = valueFromASTUntyped(argument.value, variables)
  return args
}

/** What the fields of one fetch share: the same `limit` and other arguments. */
const argumentsKey = (node: FieldNode, variables: Variables): string => JSON.stringify([limitOf(node, variables) ?? null, Object.entries(listArgsOf(node, variables)).sort(([a], [b]) => a < b ? -1 : 1)])

function groupBy<K> (nodes: readonly FieldNode[], keyOf: (node: FieldNode) => K): Map<K, FieldNode[]> {
  const groups = new Map<K, FieldNode[]>()
  for (const node of nodes) {
    const key = keyOf(node)
    const group = groups.get(key)
    if (group === undefined) groups.set(key, [node])
    else group.push(node)
  }
  return groups
}

const responseKey = (node: FieldNode): string => node.alias?.value ?? node.name.value

function hasPerResponseKey (plan: Plan): boolean {
  return plan.some((fetch) => fetch.perResponseKey || hasPerResponseKey(fetch.below))
}

function hasLoaded (plan: Plan): boolean {
  return plan.some((fetch) => fetch.loaded.length > 0 || hasLoaded(fetch.below))
}

function needsCaller (plan: Plan): boolean {
  return plan.some((fetch) => fetch.relation.needsCaller || needsCaller(fetch.below))
}

/** A field asked under several response keys with different arguments: each key gets its own answer. */
type PerResponseKey = ((args: unknown, context: unknown, info: GraphQLResolveInfo) => unknown) & { answers: Map<string, unknown> }

function answerFor (row: Row, fetch: Fetch, value: unknown): void {
  if (!fetch.perResponseKey) {
    row[fetch.field] = value
    return
  }
  let answer = row[fetch.field] as PerResponseKey | undefined
  if (typeof answer !== 'function') {
    const answers = new Map<string, unknown>()
    // graphql-js's default resolver calls a function-valued property with the field's info.
    answer = Object.assign((_args: unknown, _context: unknown, info: GraphQLResolveInfo) => answers.get(String(info.path.key)), { answers })
    row[fetch.field] = answer
  }
  for (const key of fetch.responseKeys) answer.answers.set(key, value)
}

/** The rows a relation field holds in `rows`, each once (answers per response key included). */
function childrenOf (rows: readonly Row[], field: string): Row[] {
  const children = new Set<Row>()
  const add = (value: unknown): void => {
    if (Array.isArray(value)) for (const child of value as Row[]) children.add(child)
    else if (value !== null && value !== undefined) children.add(value as Row)
  }
  for (const row of rows) {
    const value = row[field]
    if (typeof value === 'function') for (const answer of (value as PerResponseKey).answers.values()) add(answer)
    else add(value)
  }
  return [...children]
}

function rowsAt (value: unknown, path: readonly string[], rows: Row[]): void {
  if (value === null || value === undefined) return
  if (Array.isArray(value)) {
    for (const item of value) rowsAt(item, path, rows)
  } else if (path.length === 0) {
    rows.push(value as Row)
  } else {
    rowsAt((value as Row)[path[0] as string], path.slice(1), rows)
  }
}

/** What a planner is: see `relationPlanner`. */
export interface RelationPlanner {
  /** Whether rows of the GraphQL type `name` get their relations from the planner. */
  plans: (name: string) => boolean
  /**
   * Loads, into a root field's answer, every relation its selection asks below it, and gives every
   * row its GraphQL field names. Returns the answer.
   */
  withRelations: <T>(db: Db, info: GraphQLResolveInfo, answer: T, caller: Caller) => Promise<T>
  /** The same below rows of the type `type` (with their columns as REST has them): a declared root field's. */
  withRelationsBelow: (db: Db, type: string, nodes: readonly FieldNode[], fragments: Fragments, variables: Variables, rows: Row[], caller: Caller) => Promise<void>
  /**
   * Whether an operation of `document` asks one relation under several response keys with different
   * arguments: those answers are functions of the response key, which graphql-js's default resolver
   * calls but graphql-jit's compiled reads do not, so such an operation must run on graphql-js.
   */
  answersPerResponseKeyIn: (schema: GraphQLSchema, document: DocumentNode, variables: Variables) => boolean
}

/**
 * The one engine that loads relations below GraphQL answers, for every planned type alike (`types`:
 * the users and every declared resource, built-in or a host's). What a selection asks below a level
 * is loaded in one statement answering JSON (`relationsAsJson`), whatever its depth and the number of
 * rows — or, when answers go by response key, level by level with one statement per relation field
 * and level — each relation narrowed by its target's read rule; the loaded fields it selects come
 * after, one statement per field and relation. Rows get their GraphQL field names, so that no field
 * below a root needs a resolver (graphql-jit then reads plain properties). See
 * PERFORMANCE-DECISIONS.md, 'Relations loaded by the root fields, by plan'.
 */
export function relationPlanner (types: PlannedTypes, listingOf?: ListingOf): RelationPlanner {
  const typeNamed = (name: string): PlannedType => {
    const type = types.get(name)
    if (type === undefined) throw new Error(`GraphQL type ${name} is not one the planner loads`)
    return type
  }

  /** Gives rows their GraphQL names (`createdAt` for `created_at`), loaded fields their camelCase keys. */
  function rename (type: PlannedType, rows: readonly Row[]): void {
    for (const [field, column] of type.renamed) {
      for (const row of rows) if (column in row) row[field] = row[column]
    }
    for (const [field, column] of type.loaded) {
      for (const row of rows) if (column in row) row[field] = camelCased(row[column])
    }
  }

  /** Columns as [field, column]. */
  const named = (type: PlannedType, columns: readonly string[]): Array<readonly [string, string]> =>
    columns.map((column) => [type.fieldOf.get(column) ?? column, column])

  /**
   * What to load below rows of `type` for the field nodes that select them: one fetch per relation
   * field and distinct `limit`, each with the columns its selections read and its own plan below.
   * Response keys of one field that disagree further down (`a: author { posts(limit: 1) }` and
   * `b: author { posts(limit: 2) }`) get a fetch each, so that each has rows of its own.
   */
  function planFor (type: PlannedType, nodes: readonly FieldNode[], fragments: Fragments, variables: Variables): Plan {
    const plan: Fetch[] = []
    for (const [field, fieldNodes] of selectedFields(nodes, fragments)) {
      const relation = type.relations.get(field)
      if (relation === undefined) continue
      const target = typeNamed(relation.type)
      const fetches: Fetch[] = []
      for (const asked of groupBy(fieldNodes, (node) => argumentsKey(node, variables)).values()) {
        const limit = limitOf(asked[0] as FieldNode, variables) ?? undefined
        const args = listArgsOf(asked[0] as FieldNode, variables)
        const below = planFor(target, asked, fragments, variables)
        const split = hasPerResponseKey(below) ? [...groupBy(asked, responseKey).values()] : [asked]
        for (const group of split) {
          const shown = selectedFields(group, fragments)
          const loaded = [...target.loaded].filter(([loadedField]) => shown.has(loadedField))
          // The key the loaded fields are loaded by is shown too.
          const loadKey = loaded.length === 0 || target.resource === undefined ? [] : [target.resource.key]
          fetches.push({
            field,
            relation,
            type: target,
            limit,
            args,
            responseKeys: [...new Set(group.map(responseKey))],
            columns: selectedColumns(shown, target, keysOf(target, shown, alwaysOf(relation))),
            shown: withOwner(target, selectedColumns(shown, target, loadKey)),
            loaded,
            perResponseKey: false,
            below: split.length === 1 ? below : planFor(target, group, fragments, variables)
          })
        }
      }
      for (const fetch of fetches) fetch.perResponseKey = fetches.length > 1
      plan.push(...fetches)
    }
    return plan
  }

  /** The owner a relation's rows are narrowed to for `viewer` (its target's owner read rule), or undefined for every row. */
  const ownerFor = (relation: PlannedRelation, viewer: AccessUser | undefined): number | undefined =>
    relation.narrow === undefined ? undefined : readableOwner(relation.narrow.resource, viewer)

  /** What a list's filters and `orderBy` add to its link (nothing when it has none). */
  const listingFor = ({ relation, args }: Fetch, viewer: AccessUser | undefined): Listing | undefined =>
    relation.listed === undefined || listingOf === undefined || Object.keys(args).length === 0 ? undefined : listingOf(relation.listed, viewer, args)

  /** `plan` as relations of one statement, named by field. Limits and lists' arguments are checked here, before anything runs. */
  function nested (plan: Plan, viewer: AccessUser | undefined): NestedRelation[] {
    return plan.map((fetch) => {
      const { field, relation, type, limit, shown, below } = fetch
      const owner = ownerFor(relation, viewer)
      const listing = listingFor(fetch, viewer)
      return {
        name: field,
        link: relation.link,
        limit: relation.link.list ? listLimit(limit) : undefined,
        columns: named(type, shown),
        ...owner === undefined || relation.narrow === undefined ? {} : { narrow: { owners: relation.narrow.owners, value: owner } },
        ...listing === undefined ? {} : { listing },
        below: nested(below, viewer)
      }
    })
  }

  /** Runs `plan` on `rows` in one statement; see `relationsAsJson`. */
  async function runAsOne (db: Db, plan: Plan, rows: readonly Row[], viewer: AccessUser | undefined): Promise<void> {
    if (rows.length === 0 || plan.length === 0) return
    const relations = nested(plan, viewer)
    const found = await relationsAsJson(db, rows, relations)
    for (const [at, row] of rows.entries()) {
      const loaded = found[at]
      for (const { name, limit } of relations) row[name] = loaded?.[name] ?? (limit === undefined ? null : NONE)
    }
  }

  /** Runs `plan` on `rows`: one statement per fetch, whatever the number of rows; fetches of a level run together. */
  async function run (db: Db, plan: Plan, rows: readonly Row[], viewer: AccessUser | undefined): Promise<void> {
    if (rows.length === 0 || plan.length === 0) return
    await Promise.all(plan.map(async (fetch) => {
      const { relation } = fetch
      const limit = relation.link.list ? listLimit(fetch.limit) : undefined
      const owner = ownerFor(relation, viewer)
      const narrow = owner === undefined || relation.narrow === undefined ? undefined : { owners: relation.narrow.owners, value: owner }
      const found = await linkedRows(db, relation.link, rows.flatMap((row) => keyOf(row, relation) ?? []), fetch.columns, limit, narrow, listingFor(fetch, viewer))
      const children: Row[] = []
      for (const row of rows) {
        const key = keyOf(row, relation)
        const value = (key === undefined ? undefined : found.get(key)) ?? (relation.link.list ? NONE : null)
        answerFor(row, fetch, value)
        if (Array.isArray(value)) for (const child of value as Row[]) children.push(child)
        else if (value !== null) children.push(value as Row)
      }
      rename(fetch.type, children)
      await run(db, fetch.below, children, viewer)
    }))
  }

  /** Loads the loaded fields `plan` selects on the rows it brought below `rows`: one statement per field and fetch. */
  async function loadFields (db: Db, plan: Plan, rows: readonly Row[]): Promise<void> {
    await Promise.all(plan.map(async (fetch) => {
      const children = childrenOf(rows, fetch.field)
      const resource = fetch.type.resource
      if (children.length > 0 && resource !== undefined && fetch.loaded.length > 0) {
        const keyField = fetch.type.fieldOf.get(resource.key) ?? resource.key
        // The keys as the representation has them: a bigint or uuid key is text, as `load` takes it.
        const idOf = (child: Row): Key | undefined => keyOfType(resource.keyType, child[keyField] ?? child[resource.key])
        const ids = children.map(idOf).filter((id) => id !== undefined)
        for (const [field, column] of fetch.loaded) {
          const values = await loadedValues(resource, db, column, ids)
          for (const child of children) {
            const id = idOf(child)
            child[field] = camelCased(id === undefined ? null : values.get(id) ?? null)
          }
        }
      }
      await loadFields(db, fetch.below, children)
    }))
  }

  /** Runs `plan` on `rows` of `type`, however its answers go, with its caller when a relation needs one. */
  async function load (db: Db, plan: Plan, rows: Row[], caller: Caller): Promise<void> {
    if (rows.length === 0 || plan.length === 0) return
    const viewer = needsCaller(plan) ? await caller() : undefined
    if (hasPerResponseKey(plan)) await run(db, plan, rows, viewer)
    else await runAsOne(db, plan, rows, viewer)
    // Walking every row below a level costs: only a plan that selects a loaded field does it.
    if (hasLoaded(plan)) await loadFields(db, plan, rows)
  }

  /** Where a field's answer holds rows of a planned type: the fields to follow (`edges`, `node`) and who asks. */
  interface Entry {
    path: readonly string[]
    type: PlannedType
    nodes: readonly FieldNode[]
  }

  function entries (type: GraphQLNamedType, nodes: readonly FieldNode[], fragments: Fragments, path: readonly string[] = []): Entry[] {
    const planned = types.get(type.name)
    if (planned !== undefined) return [{ path, type: planned, nodes }]
    if (!isObjectType(type)) return []
    const found: Entry[] = []
    for (const [name, fieldNodes] of selectedFields(nodes, fragments)) {
      const field: GraphQLField<unknown, unknown> | undefined = type.getFields()[name]
      if (field !== undefined) found.push(...entries(getNamedType(field.type), fieldNodes, fragments, [...path, name]))
    }
    return found
  }

  interface Planned { entry: Entry, plan: Plan }
  // Without variables a field's plan is always the same: worked out once per field of a document
  // (a document is parsed for one application).
  const plansOfFields = new WeakMap<readonly FieldNode[], Planned[]>()

  function plansOf (info: GraphQLResolveInfo): Planned[] {
    const known = plansOfFields.get(info.fieldNodes)
    if (known !== undefined) return known
    const planned = entries(getNamedType(info.returnType), info.fieldNodes, info.fragments)
      .map((entry) => ({ entry, plan: planFor(entry.type, entry.nodes, info.fragments, info.variableValues) }))
    if ((info.operation.variableDefinitions?.length ?? 0) === 0) plansOfFields.set(info.fieldNodes, planned)
    return planned
  }

  function answersPerResponseKey (root: GraphQLNamedType, operation: OperationDefinitionNode, fragments: Fragments, variables: Variables): boolean {
    if (!isObjectType(root)) return false
    for (const [name, fieldNodes] of selectedFields([operation], fragments)) {
      const field = root.getFields()[name]
      if (field === undefined) continue
      // Root fields run one resolver per response key.
      for (const keyNodes of groupBy(fieldNodes, responseKey).values()) {
        for (const entry of entries(getNamedType(field.type), keyNodes, fragments)) {
          if (hasPerResponseKey(planFor(entry.type, entry.nodes, fragments, variables))) return true
        }
      }
    }
    return false
  }

  return {
    plans: (name) => types.has(name),
    async withRelations (db, info, answer, caller) {
      for (const { entry, plan } of plansOf(info)) {
        const rows: Row[] = []
        rowsAt(answer, entry.path, rows)
        rename(entry.type, rows)
        await load(db, plan, rows, caller)
      }
      return answer
    },
    async withRelationsBelow (db, typeName, nodes, fragments, variables, rows, caller) {
      const type = typeNamed(typeName)
      rename(type, rows)
      await load(db, planFor(type, nodes, fragments, variables), rows, caller)
    },
    answersPerResponseKeyIn (schema, document, variables) {
      const fragments: Record<string, FragmentDefinitionNode> = {}
      for (const definition of document.definitions) {
        if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments[definition.name.value] = definition
      }
      return document.definitions.some((operation) => {
        if (operation.kind !== Kind.OPERATION_DEFINITION) return false
        const root = operation.operation === OperationTypeNode.MUTATION ? schema.getMutationType() : schema.getQueryType()
        const coerced = getVariableValues(schema, operation.variableDefinitions ?? [], variables)
        // Variables that are not valid fail the operation before anything is resolved.
        return root != null && coerced.coerced !== undefined && answersPerResponseKey(root, operation, fragments, coerced.coerced)
      })
    }
  }
}
