import { KindGuard, type TSchema } from '@sinclair/typebox'
import { linkSdl } from './links.js'
import { parentOf, resolveRelations, type Relation, type RelationTarget } from './relation-targets.js'
import { acceptsNull, nonNull, type Resource, type ResourceFilter } from './resource.js'
import { keyTypeOf, type KeyType } from './keys.js'

/** `owner_id` → `ownerId`: GraphQL names of a declared resource's REST fields. */
export const camelCase = (name: string): string => name.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase())

const capitalized = (name: string): string => name.charAt(0).toUpperCase() + name.slice(1)

/** The GraphQL names of a declared resource. */
export function graphqlNames (resource: Resource) {
  const type = capitalized(resource.name)
  return {
    type,
    connection: `${type}Connection`,
    edge: `${type}Edge`,
    createInput: `Create${type}Input`,
    updateInput: `Update${type}Input`,
    one: resource.name,
    /** The argument naming one row: `id`, or a singular resource's key (`userId`). */
    key: camelCase(resource.key),
    list: resource.plural,
    listConnection: `${resource.plural}Connection`,
    create: `create${type}`,
    update: `update${type}`,
    remove: `delete${type}`,
    /** The bulk writes (CONTRACT §14): `createLabels(inputs:)`, `updateLabels(where:, input:)`, `deleteLabels(where:)`. */
    createMany: `create${capitalized(resource.plural)}`,
    updateMany: `update${capitalized(resource.plural)}`,
    removeMany: `delete${capitalized(resource.plural)}`,
    /** The filters of a change or deletion by filter, as an input. */
    where: `${type}Filter`
  }
}

/** The GraphQL type of a relation's target: a declared resource's, or the built-in `User`, `Post`, `Comment`. */
export const targetTypeOf = (target: RelationTarget): string => capitalized(target.resource?.name ?? target.name)

/**
 * The text values a field is limited to, null aside: a TypeBox enum (`Type.Union` of literals,
 * `Type.Enum` of strings, `Type.String({ enum })`, a `Type.Literal`); undefined for any other field.
 */
function textValues (schema: TSchema | undefined): string[] | undefined {
  if (schema === undefined) return undefined
  const bare = nonNull(schema) as { type?: unknown, enum?: unknown, const?: unknown, anyOf?: TSchema[] }
  if (typeof bare.const === 'string') return [bare.const]
  if (bare.type === 'string' && Array.isArray(bare.enum)) return bare.enum.every((value) => typeof value === 'string') ? bare.enum as string[] : undefined
  if (bare.anyOf === undefined) return undefined
  const values = bare.anyOf.map(textValues)
  return values.every((branch) => branch !== undefined) ? [...new Set(values.flat())] : undefined
}

// What GraphQL takes as an enum value: a name, but true, false and null.
const ENUM_VALUE = /^(?!(true|false|null)$)[_A-Za-z][_0-9A-Za-z]*$/

/**
 * The GraphQL enum of a representation's field limited to text values that are all GraphQL names
 * (`todo`, `in_progress`): named after the type and the field (`TaskStatus`), its values the field's.
 * Undefined for any other field (values such as `in-progress` stay `String`).
 */
export function enumOf (resource: Resource, field: string): { name: string, values: string[] } | undefined {
  const values = textValues(resource.representation.properties[field])
  if (values === undefined || !values.every((value) => ENUM_VALUE.test(value))) return undefined
  return { name: `${capitalized(resource.name)}${capitalized(camelCase(field))}`, values }
}

/** The SDL of the enums of `resource`'s fields. */
function enumsSdl (resource: Resource): string[] {
  return Object.keys(resource.representation.properties).flatMap((field) => {
    const found = enumOf(resource, field)
    return found === undefined ? [] : [`enum ${found.name} {`, ...found.values.map((value) => `  ${value}`), '}']
  })
}

/**
 * Whether a field is an `ID`: the resource's key and the key of each of its belongsTo relations,
 * whatever their key type, and any other integer, bigint or uuid field named `id` or `…_id`
 * (a text `…_id` that names no row, a code, stays `String`).
 */
export function isIdField (resource: Resource, field: string, declared = resource.representation.properties[field] as TSchema): boolean {
  const type = keyTypeOf(nonNull(declared))
  if (typeof type !== 'string') return false
  if (type !== 'text' && (field === 'id' || field.endsWith('_id'))) return true
  return declared === resource.representation.properties[field] &&
    (field === resource.key || Object.values(resource.relations ?? {}).some((relation) => 'belongsTo' in relation && relation.key === field))
}

/**
 * The key type of an `ID` field (see `isIdField`): what its text is parsed as. An integer's for any
 * other field.
 */
export function idTypeOf (declared: TSchema | undefined): KeyType {
  const type = keyTypeOf(declared === undefined ? undefined : nonNull(declared))
  return typeof type === 'string' ? type : 'integer'
}

/**
 * A field's GraphQL type without `!`: ids (`id`, `…_id`) are `ID`, date-times `DateTime`, dates `Date`,
 * TypeBox enums an enum of the type (`TaskStatus`, see `enumOf`). `declared` is its schema, when not the
 * representation's (an action's input): an enum there is the field's own when its values are the same, else `String`.
 */
export function scalarOf (resource: Resource, field: string, declared = resource.representation.properties[field] as TSchema): string {
  const values = textValues(declared)
  if (values !== undefined) {
    const own = enumOf(resource, field)
    return own !== undefined && own.values.length === values.length && values.every((value) => own.values.includes(value)) ? own.name : 'String'
  }
  const schema = nonNull(declared) as { type?: unknown, format?: unknown, enum?: unknown }
  if (isIdField(resource, field, declared)) return 'ID'
  if (schema.type === 'integer') return 'Int'
  if (schema.type === 'number') return 'Float'
  if (schema.type === 'boolean') return 'Boolean'
  if (schema.type === 'string') return schema.format === 'date-time' ? 'DateTime' : schema.format === 'date' ? 'Date' : 'String'
  throw new Error(`defineResource(${JSON.stringify(resource.name)}): ${field} has no GraphQL scalar (integer, number, boolean or string)`)
}

const described = (text: string): string => JSON.stringify(text)

/** `due_on` → `DUE_ON`: a field's name in an enum value. */
const constantCase = (field: string): string => camelCase(field).replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()

/**
 * The GraphQL sort of a resource's lists, as PostGraphile names it: the enum `TasksOrderBy`, whose
 * values are each sortable field ascending and descending (`ID_ASC`, `DUE_ON_DESC`), each mapped to
 * REST's `sort` (`id`, `-due_on`). Undefined for a resource that is never listed (a singular one).
 */
export function orderByOf (resource: Resource): { name: string, values: ReadonlyMap<string, string> } | undefined {
  if (resource.singularOf !== undefined || resource.key !== 'id') return undefined
  const fields = [...new Set(['id', ...resource.declaration.sort ?? []])]
  const values = new Map(fields.flatMap((field) => [[`${constantCase(field)}_ASC`, field], [`${constantCase(field)}_DESC`, `-${field}`]] as const))
  return { name: `${capitalized(resource.plural)}OrderBy`, values }
}

/** The SDL of a resource's `orderBy` enum. */
function orderBySdl (resource: Resource): string[] {
  const orderBy = orderByOf(resource)
  if (orderBy === undefined) return []
  return [
    described(`The orders of ${resource.plural} lists (REST's \`sort\`): a field ascending (NULLs last) or descending (NULLs first), ties broken by id in the same direction.`),
    `enum ${orderBy.name} {`, ...[...orderBy.values.keys()].map((value) => `  ${value}`), '}'
  ]
}

/** A declared filter as a GraphQL argument: `status: TaskStatus`, `assigneeIdNull: Boolean`. */
function filterArgument (resource: Resource, { name, field, op }: ResourceFilter): string {
  return `${camelCase(name)}: ${op === 'positive' || op === 'isNull' ? 'Boolean' : scalarOf(resource, field)}`
}

/** The filter arguments of `resource`'s lists: its declared filters (but those on `key`), and `q` when it is searchable. */
function filterArguments (resource: Resource, key?: string): string[] {
  const filters = resource.filters.filter(({ field }) => field !== key)
  return [...filters.map((filter) => filterArgument(resource, filter)), ...(resource.search ?? []).length > 0 ? ['q: String'] : []]
}

/**
 * A list relation's field: `tasks(limit: Int, orderBy: [TasksOrderBy!] = [ID_ASC], status: TaskStatus, …): [Task!]!`,
 * the target's sort and filters as its own lists take them (none when the target is not declared), but
 * those on `key`, which the row gives (a hasMany's).
 */
function listRelationSdl (name: string, target: Resource | undefined, type: string, key?: string): string {
  const orderBy = target === undefined ? undefined : orderByOf(target)
  const args = ['limit: Int', ...orderBy === undefined ? [] : [`orderBy: [${orderBy.name}!] = [ID_ASC]`], ...target === undefined ? [] : filterArguments(target, key)]
  const order = orderBy === undefined ? 'by id' : 'in the order `orderBy` asks (default: by id)'
  return `  ${described(`The first \`limit\` (1–100, default 20) of its ${name}${target === undefined ? '' : ' the filters find'}, ${order}.`)}\n  ${name}(${args.join(', ')}): [${type}!]!`
}

/** `a label`, `an order`. */
// By sound: `an order`, `a user` (a `u` said as `you`), `an umbrella`.
const aOrAn = (name: string): string => `${/^([aeio]|u(?!s|n[aeiou]|ni))/.test(name) ? 'an' : 'a'} ${name}`

/**
 * The GraphQL type (without its outer `!`) of a field that may be a list or an object: a loaded
 * field's (`items: [OrderItem!]`) or a create input's. Each object becomes a type (`kind`) named by
 * its schema's `title`, else `named`; its SDL is added to `types`, once.
 */
export function fieldTypeOf (resource: Resource, field: string, schema: TSchema, named: string, kind: 'type' | 'input', types: Map<string, string>): string {
  const bare = nonNull(schema) as { type?: unknown, items?: TSchema, properties?: Record<string, TSchema>, required?: string[], title?: unknown }
  if (bare.type === 'array' && bare.items !== undefined) return `[${fieldTypeOf(resource, field, bare.items, named, kind, types)}!]`
  if (bare.type !== 'object' || bare.properties === undefined) return scalarOf(resource, field, schema)
  const name = typeof bare.title === 'string' ? bare.title : named
  if (types.has(name)) return name
  types.set(name, '')
  const required = new Set(bare.required ?? [])
  const lines = Object.entries(bare.properties).map(([property, inner]) => {
    const needed = kind === 'type' ? !acceptsNull(inner) : required.has(property) && !acceptsNull(inner)
    return `  ${camelCase(property)}: ${fieldTypeOf(resource, property, inner, `${name}${capitalized(camelCase(property))}`, kind, types)}${needed ? '!' : ''}`
  })
  types.set(name, [`${kind} ${name} {`, ...lines, '}'].join('\n'))
  return name
}

/** The GraphQL names of a declared resource's action: `archive` → the mutation `archiveLabel(id, input: ArchiveLabelInput)`. */
export function actionNames (resource: Resource, action: string) {
  const type = capitalized(resource.name)
  return { mutation: `${action}${type}`, input: `${capitalized(action)}${type}Input` }
}

/** The input types and mutations of a resource's actions. */
function actionSdl (resource: Resource, type: string): { inputs: string[], mutations: string[] } {
  const inputs: string[] = []
  const mutations: string[] = []
  for (const [action, declared] of Object.entries(resource.actions ?? {})) {
    const names = actionNames(resource, action)
    let args = `${camelCase(resource.key)}: ID!`
    if (declared.input !== undefined) {
      const required = new Set(declared.input.required ?? [])
      const fields = Object.entries(declared.input.properties).map(([field, schema]) => {
        const needed = required.has(field) && !acceptsNull(schema)
        return { line: `  ${camelCase(field)}: ${scalarOf(resource, field, schema)}${needed ? '!' : ''}`, needed }
      })
      inputs.push(`input ${names.input} {`, ...fields.map(({ line }) => line), '}')
      args += `, input: ${names.input}${fields.some(({ needed }) => needed) ? '!' : ''}`
    }
    mutations.push(`  ${described(declared.summary ?? `Runs ${action} on the ${resource.name}.`)}`, `  ${names.mutation}(${args}): ${type}`)
  }
  return { inputs, mutations }
}

/** The subscriptions of `resource`'s events; `argument` writes its equality filters as optional arguments (none without it). */
function subscriptionSdl (resource: Resource, type: string, argument?: (filter: ResourceFilter) => string): string[] {
  if (resource.events.length === 0) return []
  return [
    'extend type Subscription {',
    ...resource.events.flatMap(({ event, subscription, require }) => {
      // Required fields first; an equality filter on one of them is not repeated as an optional argument.
      const required = require.map((field) => `${camelCase(field)}: ${scalarOf(resource, field)}!`)
      const optional = argument === undefined ? [] : resource.filters.filter(({ op, field }) => op === '=' && !require.includes(field)).map(argument)
      const args = [...required, ...optional]
      const given = require.length === 0 ? 'or those with the given values' : `with the given ${require.map(camelCase).join(' and ')}${optional.length === 0 ? '' : ', and the other values when given'}`
      return [
        `  ${described(`Every ${resource.name} ${event} (after the write commits), ${given}.`)}`,
        `  ${subscription}${args.length === 0 ? '' : `(${args.join(', ')})`}: ${type}!`
      ]
    }),
    '}'
  ]
}

/** The fields `resource`'s relations add to their targets through `inverse` (and a singular resource to its parent), as extensions of the targets' types. */
function inverseSdl (resource: Resource, type: string, relations: readonly Relation[], parent: string | undefined): string[] {
  const ofParent = parent === undefined ? [] : [`extend type ${capitalized(parent)} {`, `  ${described(`Its ${resource.name}.`)}`, `  ${resource.name}: ${type}`, '}']
  return ofParent.concat(relations.flatMap((relation) => {
    const inverse = resource.relations?.[relation.name]?.inverse
    if (inverse === undefined) return []
    const list = relation.kind === 'belongsTo' || relation.kind === 'manyToMany'
    return [
      `extend type ${targetTypeOf(relation.target)} {`,
      list
        ? listRelationSdl(inverse, resource, type, relation.kind === 'belongsTo' ? relation.key : undefined)
        : `  ${described(`The ${resource.name} that has it among its ${relation.name}.`)}\n  ${inverse}: ${type}`,
      '}'
    ]
  }))
}

/** The root fields of a singular resource: one row by its key, and its update (no list, create or delete). */
function singularSdl (resource: Resource, parent: string, actions: { mutations: string[] }): string[] {
  const names = graphqlNames(resource)
  const mutations = [
    ...resource.auth.update === false
      ? []
      : [`  ${described(`Changes the fields given of the ${parent}'s ${resource.name}.`)}`, `  ${names.update}(${names.key}: ID!, input: ${names.updateInput}!): ${names.type}`],
    ...actions.mutations
  ]
  return [
    'extend type Query {',
    `  ${described(`The ${resource.name} of the ${parent} with this id, or null.`)}`,
    `  ${names.one}(${names.key}: ID!): ${names.type}`,
    '}',
    ...mutations.length === 0 ? [] : ['extend type Mutation {', ...mutations, '}']
  ]
}

/**
 * The GraphQL SDL of declared resources: a type per resource with its connection and inputs, and
 * its root fields as extensions of `Query` and `Mutation` — the same operations as the built-in
 * resources (`label(id)`, `labels(limit, offset)`, `labelsConnection(first, after)`, `createLabel`…),
 * and the fields its relations' `inverse` add to other types (`extend type Post { labels … }`).
 * `known` are every resource their relations may reach (default: `resources`).
 */
export function resourceSdl (resources: readonly Resource[], known: readonly Resource[] = resources): string {
  return resources.map((resource) => {
    const names = graphqlNames(resource)
    const field = (column: string, required: boolean) => `  ${camelCase(column)}: ${scalarOf(resource, column)}${required ? '!' : ''}`
    const properties = resource.representation.properties
    const nullable = (column: string) => acceptsNull(properties[column] as TSchema)
    // A field with a read rule is null for callers it does not admit.
    const hidden = (column: string) => resource.fieldRules?.fields[column]
    const shownNullable = (column: string) => nullable(column) || hidden(column) !== undefined
    const readRule = (column: string) => {
      const rule = hidden(column)
      return rule === undefined ? [] : [`  ${described(`Read by ${resource.owner === resource.key ? `the ${resource.name}` : `the ${resource.name}'s owner`}${rule === 'ownerOrAdmin' ? ' and administrators' : ''} only; null for everyone else.`)}`]
    }
    const writable = resource.writable
    const argument = (filter: ResourceFilter) => filterArgument(resource, filter)
    const filters = filterArguments(resource)
    // A create may leave out a field with a default: GraphQL shows the default.
    const defaultOf = (column: string) => {
      const given = (properties[column] as { default?: unknown }).default
      // An enum's default is its value's name (`= todo`), any other a JSON literal.
      return given === undefined ? '' : ` = ${enumOf(resource, column) === undefined ? JSON.stringify(given) : String(given)}`
    }
    const filterArgs = filters.length === 0 ? '' : `, ${filters.join(', ')}`
    const orderByArgument = `orderBy: [${orderByOf(resource)?.name ?? ''}!] = [ID_ASC]`
    const actions = actionSdl(resource, names.type)
    const relations = resolveRelations(resource, known)
    // The links its manyToMany relations write (`linkTaskWatcher`), and their events.
    const links = linkSdl(resource, known)
    const { owner, declaration: { ownerOnCreate } } = resource
    const { bulk } = resource
    const bulkMutations = [
      ...!bulk.create
        ? []
        : [`  ${described(`Creates ${aOrAn(resource.name)} from each input (1 to BULK_MAX_ITEMS) in one transaction, as ${names.create} does: all of them, in the order given, or none.`)}`,
            `  ${names.createMany}(inputs: [${names.createInput}!]!): [${names.type}!]!`],
      ...bulk.update === false
        ? []
        : [`  ${described(`Changes the fields given of every ${resource.name} the filters find (at least one; at most BULK_MAX_ITEMS rows), in one transaction.`)}`,
            `  ${names.updateMany}(where: ${names.where}!, input: ${names.updateInput}!): BulkChange!`],
      ...bulk.delete === false
        ? []
        : [`  ${described(`Deletes every ${resource.name} the filters find (at least one; at most BULK_MAX_ITEMS rows), in one transaction.`)}`,
            `  ${names.removeMany}(where: ${names.where}!): BulkChange!`]
    ]
    const whereInput = bulk.update === false && bulk.delete === false
      ? []
      : [`${described(`The filters of a change or deletion of ${resource.plural} by filter: at least one.`)}`, `input ${names.where} {`, ...resource.filters.map((filter) => `  ${argument(filter)}`), '}']
    // A write whose rule is `false` has no mutation (nor input).
    const mutations = [
      ...resource.auth.create === false
        ? []
        : [`  ${described(resource.create?.summary ?? `Creates ${aOrAn(resource.name)}${owner === undefined || owner === 'id' ? '' : ownerOnCreate === undefined ? ' (its owner: the caller)' : ` (its owner: the caller, or \`${camelCase(owner)}\` where the ${resource.name}'s rule allows)`}.`)}`,
            `  ${names.create}(input: ${names.createInput}!): ${names.type}`],
      ...resource.auth.update === false
        ? []
        : [`  ${described(`Changes the fields given of the ${resource.name}.`)}`, `  ${names.update}(id: ID!, input: ${names.updateInput}!): ${names.type}`],
      ...resource.auth.delete === false
        ? []
        : [`  ${described(`Deletes the ${resource.name}; false when there was none.`)}`, `  ${names.remove}(id: ID!): Boolean`],
      ...actions.mutations,
      ...bulkMutations,
      ...links.mutations
    ]
    // A create that may name its owner takes it, optionally.
    const namedOwner = ownerOnCreate === undefined || owner === undefined ? [] : [`  ${described('Left out: the caller.')}`, field(owner, false)]
    // Object types of loaded fields and of a create's own input, by name.
    const objectTypes = new Map<string, string>()
    const shown = (column: string) => [...readRule(column), resource.loaded.includes(column)
      ? `  ${camelCase(column)}: ${fieldTypeOf(resource, column, properties[column] as TSchema, `${names.type}${capitalized(camelCase(column))}`, 'type', objectTypes)}${shownNullable(column) ? '' : '!'}`
      : field(column, !shownNullable(column))].join('\n')
    const ownCreate = resource.create
    const ownInput = ownCreate === undefined
      ? []
      : Object.entries(ownCreate.input.properties).map(([column, schema]) => {
        const needed = (ownCreate.input.required ?? []).includes(column) && !acceptsNull(schema)
        return `  ${camelCase(column)}: ${fieldTypeOf(resource, column, schema, `${names.createInput}${capitalized(camelCase(column))}`, 'input', objectTypes)}${needed ? '!' : ''}`
      })
    // A resource under a parent is created with the parent's key (`postId: ID!`), which REST takes from the path.
    const parentKey = resource.under === undefined ? [] : [field(resource.under.key, true)]
    // Write-only inputs, after the columns: required in a create when their schema is.
    const inputsOn = (write: 'create' | 'update', required: (schema: TSchema) => boolean) => Object.entries(resource.inputs ?? {})
      .filter(([, { on }]) => on.includes(write))
      .map(([input, { schema, graphqlName }]) => `  ${graphqlName ?? camelCase(input)}: ${scalarOf(resource, input, schema)}${required(schema) ? '!' : ''}`)
    const createInput = [
      `input ${names.createInput} {`,
      ...parentKey,
      ...ownCreate === undefined ? writable.map((column) => `${field(column, !nullable(column) && defaultOf(column) === '')}${defaultOf(column)}`) : ownInput,
      ...namedOwner,
      ...inputsOn('create', (schema) => !KindGuard.IsOptional(schema) && !acceptsNull(schema)),
      '}'
    ]
    const updateInput = resource.auth.update === false ? [] : [`input ${names.updateInput} {`, ...writable.map((column) => field(column, false)), ...inputsOn('update', () => false), '}']
    const parent = parentOf(resource, known)
    if (parent !== undefined) {
      return [
        `${described(`A ${resource.name}, one per ${parent.name} (REST: /${parent.plural}/{id}/${resource.name}).`)}`,
        ...enumsSdl(resource),
        `type ${names.type} {`,
        ...resource.columns.map((column) => [...readRule(column), field(column, !shownNullable(column))].join('\n')),
        ...relations.map((relation) => `  ${relation.name}: ${targetTypeOf(relation.target)}${relation.required === true ? '!' : ''}`),
        '}',
        ...updateInput,
        ...actions.inputs,
        ...singularSdl(resource, parent.name, actions),
        ...subscriptionSdl(resource, names.type),
        ...inverseSdl(resource, names.type, relations, parent.name)
      ].join('\n')
    }
    return [
      `${described(`${capitalized(aOrAn(resource.name))} (REST: /${resource.plural}).`)}`,
      `type ${names.type} {`,
      ...Object.keys(resource.schemas.item.properties).map(shown),
      ...relations.map((relation) => relation.list
        ? listRelationSdl(relation.name, relation.target.resource, targetTypeOf(relation.target), relation.kind === 'hasMany' ? relation.key : undefined)
        : `  ${relation.name}: ${targetTypeOf(relation.target)}${relation.required === true ? '!' : ''}`),
      '}',
      ...enumsSdl(resource),
      ...orderBySdl(resource),
      `type ${names.edge} {\n  cursor: String!\n  node: ${names.type}!\n}`,
      `type ${names.connection} {\n  edges: [${names.edge}!]!\n  pageInfo: PageInfo!\n}`,
      ...resource.auth.create === false ? [] : createInput,
      ...updateInput,
      ...whereInput,
      ...actions.inputs,
      ...[...objectTypes.values()],
      'extend type Query {',
      `  ${described(`The ${resource.name} with this id, or null.`)}`,
      `  ${names.one}(id: ID!): ${names.type}`,
      `  ${described(`${capitalized(resource.plural)} in the order \`orderBy\` asks (default: ascending id): the first \`limit\` (1–100, default 20), after skipping \`offset\`.`)}`,
      `  ${names.list}(limit: Int, offset: Int, ${orderByArgument}${filterArgs}): [${names.type}!]!`,
      `  ${described(`${capitalized(resource.plural)} in the order \`orderBy\` asks (default: ascending id), a page at a time: \`first\` after the cursor \`after\` (made under the same order and filters, by either style).`)}`,
      `  ${names.listConnection}(first: Int, after: String, ${orderByArgument}${filterArgs}): ${names.connection}!`,
      '}',
      ...mutations.length === 0 ? [] : ['extend type Mutation {', ...mutations, '}'],
      ...subscriptionSdl(resource, names.type, argument),
      ...links.types,
      ...links.subscriptions.length === 0 ? [] : ['extend type Subscription {', ...links.subscriptions, '}'],
      ...inverseSdl(resource, names.type, relations, undefined)
    ].join('\n')
  }).join('\n')
}
