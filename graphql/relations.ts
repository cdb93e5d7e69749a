import {
  getNamedType, getVariableValues, isObjectType, Kind, OperationTypeNode, valueFromASTUntyped,
  type DocumentNode, type FieldNode, type FragmentDefinitionNode, type GraphQLSchema, type GraphQLField, type OperationDefinitionNode, type GraphQLNamedType, type GraphQLResolveInfo
} from 'graphql'
import type { Db } from '../db/connect.js'
import { linkedRows, links, relationsAsJson, type Link, type NestedRelation } from '../db/relations.js'
import type { Database } from '../db/types.js'
import { userList } from '../db/users.js'
import type { AccessUser } from '../plugins/auth.js'
import { comments } from '../rules/comments.js'
import { posts } from '../rules/posts.js'
import { resolveRelations } from '../schema/relation-targets.js'
import type { FieldRules, Resource } from '../schema/resource.js'
import { targetTypeOf } from '../schema/resource-sdl.js'
import { userFieldRules } from '../schema/users.js'
import { listLimit } from './inputs.js'
import { fieldsByColumn, isLoadedType, renamedColumns, selectedColumns, selectedFields, type Fragments, type LoadedType } from './selection.js'

type Row = Record<string, unknown>
type Variables = Readonly<Record<string, unknown>>

interface Relation {
  type: LoadedType
  link: Link
  order: readonly string[]
}

const keyOf = (row: Row, relation: Relation): number => Number(row[relation.link.by])

/** Columns the children always need: their id, and for lists the key they are grouped by. */
const alwaysOf = ({ link }: Relation): readonly string[] => link.list ? ['id', link.key] : ['id']

// Each type's columns in their list's order.
const orders: Record<LoadedType, readonly string[]> = { User: userList.columns, Post: posts.columns, Comment: comments.columns }

// Each type's field rules: a hidden field's resolver (./field-rules.ts) needs the row's owner beside it.
const fieldRules: Record<LoadedType, FieldRules | undefined> = { User: userFieldRules, Post: posts.fieldRules, Comment: comments.fieldRules }

/** `columns` of `type`, with the owner's column when one of them is hidden from all but their owner. */
function withOwner (type: LoadedType, columns: readonly string[]): readonly string[] {
  const rules = fieldRules[type]
  if (rules === undefined || columns.includes(rules.owner) || !columns.some((column) => rules.fields[column] !== undefined)) return columns
  return orders[type].filter((column) => column === rules.owner || columns.includes(column))
}

/**
 * The relations of a declared type the planner loads (posts, comments): each declared relation as a link, a
 * belongsTo by the row's key, a hasMany by the other's. The planner loads those two kinds between
 * its own types only: any other relation of such a declaration stops the start.
 */
function plannedRelations (resource: Resource): Record<string, Relation> {
  return Object.fromEntries(resolveRelations(resource, [resource]).map((relation) => {
    const type = targetTypeOf(relation.target)
    if (!isLoadedType(type) || (relation.kind !== 'belongsTo' && relation.kind !== 'hasMany')) {
      throw new Error(`${resource.name}.${relation.name}: the GraphQL planner loads belongsTo and hasMany relations between User, Post and Comment only`)
    }
    const table = relation.target.table as keyof Database
    const link: Link = relation.kind === 'belongsTo'
      ? { table, key: 'id', by: relation.key, list: false }
      : { table, key: relation.key, by: 'id', list: true }
    return [relation.name, { type, link, order: orders[type] }]
  }))
}

/** The relation fields of each type: which of db/'s links each follows (Post's and Comment's from their declarations). */
const relations: Record<LoadedType, Readonly<Record<string, Relation>>> = {
  User: {
    posts: { type: 'Post', link: links.postsOfAuthor, order: orders.Post }
  },
  Post: plannedRelations(posts),
  Comment: plannedRelations(comments)
}

/**
 * Relation fields that declared resources add to the built-in types through `inverse` (`Post.labels`):
 * the planner reads the columns they are found by, and once the built-in relations of a level are
 * loaded, `load` adds them (./declared-answers.ts: one statement per field and level).
 */
export interface AddedFields {
  /** For each type, its added fields and the column each is found by (`id`, or a belongsTo's key). */
  readonly keys: ReadonlyMap<string, ReadonlyMap<string, string>>
  load: (db: Db, type: LoadedType, rows: Row[], field: string, asked: { nodes: readonly FieldNode[], fragments: Fragments, variables: Variables }, caller: () => Promise<AccessUser | undefined>) => Promise<void>
}

/** Added fields, with who asks: the caller their targets' read rules look at (undefined: none, as for a shared subscription answer). */
export interface Additions {
  fields: AddedFields
  caller: () => Promise<AccessUser | undefined>
}

/** The columns the added fields that `fields` select on `type` are found by. */
function addedKeys (type: LoadedType, fields: ReadonlyMap<string, unknown>, added: AddedFields | undefined): string[] {
  const keys = added?.keys.get(type)
  if (keys === undefined) return []
  const wanted: string[] = []
  for (const field of fields.keys()) {
    const key = keys.get(field)
    if (key !== undefined) wanted.push(key)
  }
  return wanted
}

/** What rows of `type` must read besides their shown fields: the columns their selected relations are found by. */
function keysOf (type: LoadedType, fields: ReadonlyMap<string, unknown>, always: readonly string[]): readonly string[] {
  const keys = [...always]
  for (const field of fields.keys()) {
    const relation = relations[type][field]
    if (relation !== undefined) keys.push(relation.link.by)
  }
  return keys
}

/** One statement of a plan: a relation field at one `limit`, for the response keys that ask it so, and what to load below it. */
interface Fetch {
  field: string
  relation: Relation
  /** The `limit` as asked (undefined: the default); checked when the plan runs. */
  limit: unknown
  responseKeys: string[]
  columns: readonly string[]
  /** Of those, the columns of fields the query shows (`columns` adds the keys rows are found by). */
  shown: readonly string[]
  /** Other response keys ask the same field differently (another `limit`, or other limits below): answers go by response key. */
  perResponseKey: boolean
  below: Plan
}
type Plan = readonly Fetch[]

const NONE: readonly never[] = Object.freeze([])

const renamed = { User: renamedColumns('User'), Post: renamedColumns('Post'), Comment: renamedColumns('Comment') }

const fieldsOf = { User: fieldsByColumn('User'), Post: fieldsByColumn('Post'), Comment: fieldsByColumn('Comment') }

/** Columns as [field, column]. */
const named = (type: LoadedType, columns: readonly string[]): Array<readonly [string, string]> =>
  columns.map((column) => [fieldsOf[type].get(column) ?? column, column])

/**
 * `plan` as relations of one statement, named by field: for plans without answers per response
 * key (those take `run`). Limits are checked here, before anything runs.
 */
function nested (plan: Plan): NestedRelation[] {
  return plan.map(({ field, relation: { type, link }, limit, shown, below }) => ({
    name: field,
    link,
    limit: link.list ? listLimit(limit) : undefined,
    columns: named(type, shown),
    below: nested(below)
  }))
}

/** Runs `plan` on `rows` in one statement; see `relationsAsJson`. */
async function runAsOne (db: Db, plan: Plan, rows: readonly Row[]): Promise<void> {
  if (rows.length === 0 || plan.length === 0) return
  const relations = nested(plan)
  const found = await relationsAsJson(db, rows, relations)
  for (const [at, row] of rows.entries()) {
    const loaded = found[at]
    for (const { name, limit } of relations) row[name] = loaded?.[name] ?? (limit === undefined ? null : NONE)
  }
}

/** Gives rows their GraphQL names (`createdAt` for `created_at`), so that no scalar field needs a resolver either. */
function rename (type: LoadedType, rows: readonly Row[]): void {
  for (const [field, column] of renamed[type]) {
    for (const row of rows) if (column in row) row[field] = row[column]
  }
}

function limitOf (node: FieldNode, variables: Variables): unknown {
  const argument = node.arguments?.find((arg) => arg.name.value === 'limit')
  return argument === undefined ? undefined : valueFromASTUntyped(argument.value, variables)
}

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

/**
 * What to load below rows of `type` for the field nodes that select them: one fetch per relation
 * field and distinct `limit`, each with the columns its selections read and its own plan below.
 * Response keys of one field that disagree further down (`a: author { posts(limit: 1) }` and
 * `b: author { posts(limit: 2) }`) get a fetch each, so that each has rows of its own.
 */
function planFor (type: LoadedType, nodes: readonly FieldNode[], fragments: Fragments, variables: Variables, added?: AddedFields): Plan {
  const plan: Fetch[] = []
  for (const [field, fieldNodes] of selectedFields(nodes, fragments)) {
    const relation = relations[type][field]
    if (relation === undefined) continue
    const fetches: Fetch[] = []
    for (const [limit, asked] of groupBy(fieldNodes, (node) => limitOf(node, variables) ?? undefined)) {
      const below = planFor(relation.type, asked, fragments, variables, added)
      const split = hasPerResponseKey(below) ? [...groupBy(asked, responseKey).values()] : [asked]
      for (const group of split) {
        const shown = selectedFields(group, fragments)
        // Added fields are loaded after this statement, from the rows it answers: they show their keys.
        const keys = addedKeys(relation.type, shown, added)
        fetches.push({
          field,
          relation,
          limit,
          responseKeys: [...new Set(group.map(responseKey))],
          columns: selectedColumns(shown, relation.type, relation.order, [...keysOf(relation.type, shown, alwaysOf(relation)), ...keys]),
          shown: withOwner(relation.type, selectedColumns(shown, relation.type, relation.order, keys)),
          perResponseKey: false,
          below: split.length === 1 ? below : planFor(relation.type, group, fragments, variables, added)
        })
      }
    }
    for (const fetch of fetches) fetch.perResponseKey = fetches.length > 1
    plan.push(...fetches)
  }
  return plan
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

/** Runs `plan` on `rows`: one statement per fetch, whatever the number of rows; fetches of a level run together. */
async function run (db: Db, plan: Plan, rows: readonly Row[]): Promise<void> {
  if (rows.length === 0 || plan.length === 0) return
  await Promise.all(plan.map(async (fetch) => {
    const { relation } = fetch
    const limit = relation.link.list ? listLimit(fetch.limit) : undefined
    const found = await linkedRows(db, relation.link, rows.map((row) => keyOf(row, relation)), fetch.columns, limit)
    const children: Row[] = []
    for (const row of rows) {
      const value = found.get(keyOf(row, relation)) ?? (relation.link.list ? NONE : null)
      answerFor(row, fetch, value)
      if (Array.isArray(value)) for (const child of value as Row[]) children.push(child)
      else if (value !== null) children.push(value as Row)
    }
    rename(relation.type, children)
    await run(db, fetch.below, children)
  }))
}

/** Where a field's answer holds rows of a loaded type: the fields to follow (`edges`, `node`) and who asks. */
interface Entry {
  path: readonly string[]
  type: LoadedType
  nodes: readonly FieldNode[]
}

function entries (type: GraphQLNamedType, nodes: readonly FieldNode[], fragments: Fragments, path: readonly string[] = []): Entry[] {
  if (isLoadedType(type.name)) return [{ path, type: type.name, nodes }]
  if (!isObjectType(type)) return []
  const found: Entry[] = []
  for (const [name, fieldNodes] of selectedFields(nodes, fragments)) {
    const field: GraphQLField<unknown, unknown> | undefined = type.getFields()[name]
    if (field !== undefined) found.push(...entries(getNamedType(field.type), fieldNodes, fragments, [...path, name]))
  }
  return found
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

interface Planned { entry: Entry, plan: Plan }
// Without variables a field's plan is always the same: worked out once per field of a document
// (added fields are the application's, and a document is parsed for one application).
const plansOfFields = new WeakMap<readonly FieldNode[], Planned[]>()

function plansOf (info: GraphQLResolveInfo, added: AddedFields | undefined): Planned[] {
  const known = plansOfFields.get(info.fieldNodes)
  if (known !== undefined) return known
  const planned = entries(getNamedType(info.returnType), info.fieldNodes, info.fragments)
    .map((entry) => ({ entry, plan: planFor(entry.type, entry.nodes, info.fragments, info.variableValues, added) }))
  if ((info.operation.variableDefinitions?.length ?? 0) === 0) plansOfFields.set(info.fieldNodes, planned)
  return planned
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

/**
 * Loads the added fields that `nodes` select, on `rows` of `type` and on the built-in rows below
 * them, once the built-in relations are: one call of `load` per added field and level.
 */
async function loadAdded (db: Db, type: LoadedType, nodes: readonly FieldNode[], fragments: Fragments, variables: Variables, rows: Row[], additions: Additions): Promise<void> {
  if (rows.length === 0) return
  const keys = additions.fields.keys.get(type)
  const loads: Array<Promise<void>> = []
  for (const [field, fieldNodes] of selectedFields(nodes, fragments)) {
    if (keys?.has(field) === true) {
      loads.push(additions.fields.load(db, type, rows, field, { nodes: fieldNodes, fragments, variables }, additions.caller))
      continue
    }
    const relation = relations[type][field]
    if (relation !== undefined) loads.push(loadAdded(db, relation.type, fieldNodes, fragments, variables, childrenOf(rows, field), additions))
  }
  await Promise.all(loads)
}

/**
 * Loads, into a root field's answer, every relation its selection asks below it — in one statement
 * answering JSON (`runAsOne`), or, when answers go by response key, level by level with one statement
 * per relation field and level (`run`) — and gives every row its GraphQL field names, so that
 * no field below a root needs a resolver (graphql-jit then reads plain properties). Fields that
 * declared resources add (`additions`) are loaded after, level by level. Returns the answer.
 * See PERFORMANCE-DECISIONS.md, 'Relations loaded by the root fields, by plan'.
 */
export async function withRelations<T> (db: Db, info: GraphQLResolveInfo, answer: T, additions?: Additions): Promise<T> {
  const added = additions === undefined || additions.fields.keys.size === 0 ? undefined : additions
  for (const { entry, plan } of plansOf(info, added?.fields)) {
    const rows: Row[] = []
    rowsAt(answer, entry.path, rows)
    rename(entry.type, rows)
    if (hasPerResponseKey(plan)) await run(db, plan, rows)
    else await runAsOne(db, plan, rows)
    if (added !== undefined) await loadAdded(db, entry.type, entry.nodes, info.fragments, info.variableValues, rows, added)
  }
  return answer
}

/**
 * Loads, into rows of a built-in `type` that a declared resource's relation brought (with all their
 * columns), the built-in relations that `nodes` select below them, and gives them their GraphQL
 * field names: as `withRelations` does below a root field.
 */
export async function withRelationsBelow (db: Db, type: LoadedType, nodes: readonly FieldNode[], fragments: Fragments, variables: Variables, rows: Row[], additions?: Additions): Promise<void> {
  rename(type, rows)
  const added = additions === undefined || additions.fields.keys.size === 0 ? undefined : additions
  const plan = planFor(type, nodes, fragments, variables, added?.fields)
  if (hasPerResponseKey(plan)) await run(db, plan, rows)
  else await runAsOne(db, plan, rows)
  if (added !== undefined) await loadAdded(db, type, nodes, fragments, variables, rows, added)
}

function hasPerResponseKey (plan: Plan): boolean {
  return plan.some((fetch) => fetch.perResponseKey || hasPerResponseKey(fetch.below))
}

/**
 * Whether an operation asks one relation under several response keys with different arguments.
 * Those answers are functions of the response key, which graphql-js's default resolver calls but
 * graphql-jit's compiled reads do not: such an operation must run on graphql-js.
 */
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

/** The same for any operation of `document` (the hook that asks does not know which one runs). */
export function answersPerResponseKeyIn (schema: GraphQLSchema, document: DocumentNode, variables: Variables): boolean {
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
