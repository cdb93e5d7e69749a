// The shape of a resource declaration, as one TypeBox schema compiled once: the type of every option
// (names, lists of fields, rules, relation kinds, events, hooks and actions as functions) is checked
// here, and a mistake is one line naming the option's path and what it must be, never the value
// given. `defineResource` checks only what looks across options (a filter names a field of the
// representation, an owner rule needs an owner).
import { Kind, Type, TypeRegistry, type TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import type { ResourceDeclaration } from './resource.js'

/** A resource's, a relation's, an action's or a subscription's name. */
export const NAME = /^[a-z][a-zA-Z0-9]*$/
/** A table's or a column's name. */
export const IDENTIFIER = /^[a-z_][a-z0-9_]*$/
/** A body field that is not a column: a write-only input, a field of an action's input. */
export const INPUT_NAME = /^[a-z][a-z0-9_]*$/
/** A write-only input's name in GraphQL. */
export const GRAPHQL_NAME = /^[a-z][a-zA-Z0-9_]*$/

export const RELATION_KINDS = ['belongsTo', 'hasMany', 'hasOne', 'manyToMany'] as const
export const HOOKS = ['prepareCreate', 'beforeCreate', 'afterCreate', 'beforeCreateMany', 'prepareUpdate', 'beforeUpdate', 'afterUpdate', 'beforeDelete', 'afterDelete'] as const
const RULES = ['public', 'authenticated', 'admin', 'owner', 'ownerOrAdmin'] as const
const OPERATORS = ['=', '>=', '>', '<=', '<', 'positive', 'caseInsensitive', 'isNull'] as const
const EVENTS = ['created', 'updated', 'deleted'] as const
const LINK_EVENTS = ['linked', 'unlinked'] as const

// What the messages say, kept on the schemas themselves (TypeBox keeps unknown options):
// `expected`, what a value must be; `known`, what an unknown key of an object is not; `keys`, what
// the name of an entry of a record must be; `discriminator`, the key that picks a union's branch.
interface Said { expected?: string, known?: string, keys?: string, discriminator?: readonly string[] }

const listed = (values: readonly unknown[]): string => values.length < 2
  ? values.join('')
  : `${values.slice(0, -1).join(', ')} or ${String(values.at(-1))}`
const oneOf = (values: ReadonlyArray<string | false>, why = ''): TSchema =>
  Type.Union(values.map((value) => Type.Literal(value)), { expected: `${values.length > 2 ? 'one of ' : ''}${listed(values)}${why}` })
const named = (pattern: RegExp, expected: string): TSchema => Type.String({ pattern: pattern.source, expected })
const Name = named(NAME, 'lower camel case letters and digits')
const Identifier = named(IDENTIFIER, 'a lower-case SQL identifier')
const Text = Type.String({ expected: 'text' })
const Flag = Type.Boolean({ expected: 'true or false' })
const Fn = Type.Function([], Type.Unknown(), { expected: 'a function' })
const Field = Type.String({ expected: 'the name of a field' })
const Fields = Type.Array(Field, { expected: 'a list of field names' })
// An owner: a field (`owner_id`), a relation's target's column (`project.owner_id`) or a relation (`watchers`).
const OwnerPath = Type.String({ pattern: '^[a-z][a-zA-Z0-9_]*(\\.[a-z][a-z0-9_]*)?$', expected: 'a field, relation.column or a relation\'s name' })
const optional = <T extends TSchema>(schema: T) => Type.Optional(schema)
/** An object of these options and no other: `known` says what an unknown key is not. */
const closed = (properties: Record<string, TSchema>, known: string, expected = 'an object'): TSchema =>
  Type.Object(properties, { additionalProperties: false, known, expected })
/** An object of entries named by `pattern`, each a `value`. */
const byName = (pattern: RegExp, keys: string, value: TSchema, expected: string): TSchema =>
  Type.Record(Type.String({ pattern: pattern.source }), value, { additionalProperties: false, keys, expected })
const byField = (value: TSchema, expected: string): TSchema => Type.Record(Type.String(), value, { expected })

// A TypeBox object schema given as an option (the representation, an input): an object whose `type`
// is 'object' and whose `properties` are schemas named by a pattern, at least `minFields` of them.
// Checked as one value, so that a mistake is said of the option, not of its schema's insides.
const OBJECT_SCHEMA = 'TandemApi:ObjectSchema'
interface ObjectSchemaOptions { fields: string, minFields: number }
const fieldPatterns = new Map<string, RegExp>()
TypeRegistry.Set<ObjectSchemaOptions>(OBJECT_SCHEMA, (schema, value) => {
  if (typeof value !== 'object' || value === null) return false
  const { type, properties } = value as { type?: unknown, properties?: unknown }
  if (type !== 'object' || typeof properties !== 'object' || properties === null) return false
  const pattern = fieldPatterns.get(schema.fields) ?? new RegExp(schema.fields)
  fieldPatterns.set(schema.fields, pattern)
  const fields = Object.entries(properties)
  return fields.length >= schema.minFields && fields.every(([field, fieldSchema]) => pattern.test(field) && typeof fieldSchema === 'object' && fieldSchema !== null)
})
const objectSchema = (fields: RegExp, minFields: number, expected: string): TSchema =>
  Type.Unsafe({ [Kind]: OBJECT_SCHEMA, fields: fields.source, minFields, expected })
const AnySchema = Type.Object({}, { expected: 'a TypeBox schema' })

const ChangeRule = oneOf([...RULES.filter((rule) => rule !== 'public'), false], ' (a change needs a caller: never public)')
const LinkEvents = Type.Array(oneOf(LINK_EVENTS), { expected: 'a list of linked, unlinked or both' })
const relationOptions: Record<(typeof RELATION_KINDS)[number], Record<string, TSchema>> = {
  belongsTo: { key: Identifier, required: optional(Flag), under: optional(oneOf(['also', 'only', 'one'])) },
  hasMany: { key: Identifier, route: optional(Flag) },
  hasOne: { key: Identifier },
  manyToMany: { through: Identifier, key: Identifier, otherKey: Identifier, route: optional(Flag), links: optional(ChangeRule), events: optional(LinkEvents) }
}
const Relation = Type.Union(RELATION_KINDS.map((kind) => {
  const options = { [kind]: Name, ...relationOptions[kind], inverse: optional(Name), include: optional(Flag) }
  return closed(options, `an option of a ${kind} relation (${listed(Object.keys(options))})`)
}), { discriminator: RELATION_KINDS, expected: `exactly one of ${listed(RELATION_KINDS)}, with its options` })

const Event = closed({ subscription: optional(Name), require: optional(Fields) }, 'an option of an event (subscription or require)')
const events = Object.fromEntries(EVENTS.map((event) => [event, optional(Event)]))
const Filter = closed({ field: Field, op: optional(oneOf(OPERATORS)), description: optional(Text) }, 'an option of a filter (field, op or description)')
const hooks = Object.fromEntries(HOOKS.map((hook) => [hook, optional(Fn)]))
const INPUT_FIELDS = 'a Type.Object with at least one field, each named in lower case (a-z, 0-9, _)'

// Every option of `ResourceDeclaration`, and only those: the type says when one is added or renamed.
const options: { [Option in keyof ResourceDeclaration]-?: TSchema } = {
  name: Name,
  plural: optional(Name),
  table: Identifier,
  representation: objectSchema(IDENTIFIER, 0, 'a Type.Object (TypeBox) whose fields are lower-case SQL identifiers'),
  generated: Fields,
  owner: optional(Type.Union([OwnerPath, Type.Array(OwnerPath, { minItems: 1, expected: 'a list of one or more owners' })], { expected: 'a field, relation.column or a relation\'s name, or a list of them' })),
  ownerOnCreate: optional(Fn),
  loaded: optional(byField(closed({ load: Fn }, 'an option of a loaded field (load)'), 'an object of fields, each { load }')),
  writable: Fields,
  inputs: optional(byName(INPUT_NAME, 'in lower case (a-z, 0-9, _)', closed({
    schema: AnySchema,
    on: Type.Array(oneOf(['create', 'update']), { minItems: 1, expected: 'a list of create, update or both' }),
    graphqlName: optional(named(GRAPHQL_NAME, 'a GraphQL name starting in lower case'))
  }, 'an option of an input (schema, on or graphqlName)'), 'an object of inputs by name')),
  createLimit: optional(closed({ kind: oneOf(['login', 'signUp', 'resetPassword']), account: Fn }, 'an option of createLimit (kind or account)')),
  sort: optional(Fields),
  filters: optional(Type.Union([Fields, byName(IDENTIFIER, 'a lower-case identifier', Filter, 'an object of filters by name')], { expected: 'a list of field names, or an object of filters by name' })),
  search: optional(Fields),
  emptyPatch: optional(oneOf(['unchanged', 'refused'])),
  othersRows: optional(oneOf(['hidden', 'forbidden'])),
  fields: optional(byField(closed({ read: oneOf(['owner', 'ownerOrAdmin']) }, 'an option of a field rule (read)'), 'an object of field rules by field')),
  auth: optional(closed({
    read: optional(oneOf(RULES, ' (a resource is always readable by someone: never false)')),
    create: optional(oneOf([...RULES, false])),
    update: optional(ChangeRule),
    delete: optional(ChangeRule)
  }, 'an action (read, create, update or delete)')),
  relations: optional(byName(NAME, 'lower camel case letters and digits', Relation, 'an object of relations by name')),
  events: optional(Type.Union([Type.Array(oneOf(EVENTS), { expected: 'a list of events' }), closed(events, `an event (${listed(EVENTS)})`)], { expected: 'a list of events, or an object of events by name' })),
  bulk: optional(closed({ create: optional(Type.Union([Type.Boolean(), Type.Literal('inOneStatement')], { expected: 'true, false or inOneStatement' })), update: optional(ChangeRule), delete: optional(ChangeRule) }, 'an option of bulk (create, update or delete)')),
  // A create's input fields were never held to a pattern, and are not now; an action's always were.
  create: optional(closed({ input: objectSchema(/^/, 1, 'a Type.Object with at least one field'), summary: optional(Text), run: Fn, runMany: optional(Fn) }, 'an option of create (input, summary, run or runMany)')),
  hooks: optional(closed(hooks, `a hook (${listed(HOOKS)})`)),
  actions: optional(byName(NAME, 'lower camel case letters and digits', closed({
    auth: oneOf(['authenticated', 'admin', 'owner', 'ownerOrAdmin']),
    input: optional(objectSchema(INPUT_NAME, 1, INPUT_FIELDS)),
    summary: optional(Text),
    run: Fn
  }, 'an option of an action (auth, input, summary or run)'), 'an object of actions by name'))
}

const Declaration = closed(options, 'an option of defineResource', 'an object of options')
const check = TypeCompiler.Compile(Declaration)

/** The path of a value in the declaration as a host writes it: `relations.posts.through`, `writable[0]`. */
function pathOf (pointer: string, declaration: unknown): string {
  let value = declaration
  let path = ''
  for (const escaped of pointer.split('/').slice(1)) {
    const key = escaped.replaceAll('~1', '/').replaceAll('~0', '~')
    path += Array.isArray(value) ? `[${key}]` : `${path === '' ? '' : '.'}${key}`
    value = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined
  }
  return path === '' ? 'the declaration' : path
}

/** The union branch a value was meant for: by its `discriminator` key, else by being a list or an object. */
function branchOf (schema: TSchema & Said, value: unknown): number | undefined {
  const branches = (schema as unknown as { anyOf: Array<TSchema & Said> }).anyOf
  const { discriminator } = schema
  const candidates = discriminator !== undefined
    ? discriminator.flatMap((key, index) => typeof value === 'object' && value !== null && Object.hasOwn(value, key) ? [index] : [])
    : branches.flatMap((branch, index) => (branch[Kind] === 'Array') === Array.isArray(value) && typeof value === 'object' && value !== null && branch[Kind] !== 'Literal' ? [index] : [])
  return candidates.length === 1 ? candidates[0] : undefined
}

function describe (error: ValueError, declaration: unknown): string {
  const schema = error.schema as TSchema & Said
  const path = pathOf(error.path, declaration)
  // An option given as undefined is one left out: optional ones may be, required ones not.
  if (error.value === undefined && error.type !== ValueErrorType.ObjectAdditionalProperties) return `${path} is required`
  switch (error.type) {
    case ValueErrorType.Union: {
      const branch = branchOf(schema, error.value)
      const inner = branch === undefined ? undefined : error.errors[branch]?.First()
      return inner === undefined ? `${path} must be ${schema.expected ?? 'one of its forms'}` : describe(inner, declaration)
    }
    case ValueErrorType.ObjectAdditionalProperties: return schema[Kind] === 'Record'
      ? `${path}: the name must be ${schema.keys ?? 'of another form'}`
      : `${path} is not ${schema.known ?? 'an option'}`
    default: return `${path} must be ${schema.expected ?? 'of another type'}`
  }
}

/**
 * Throws, naming the option's path, when `declaration` is not shaped as a `ResourceDeclaration`:
 * an option of the wrong type or value, a required one left out, or one that does not exist (a typo).
 * @example
 * checkDeclarationShape({ name: 'label', …, auth: { update: 'owners' } })
 * // Error: defineResource("label"): auth.update must be one of authenticated, admin, owner, ownerOrAdmin or false (…)
 */
export function checkDeclarationShape (declaration: unknown): void {
  if (check.Check(declaration)) return
  const error = check.Errors(declaration).First()
  const name = (declaration as { name?: unknown } | null)?.name
  // The name is said only when it is one: whatever else was given stays out of the message.
  const said = typeof name === 'string' && NAME.test(name) ? JSON.stringify(name) : ''
  throw new Error(`defineResource(${said}): ${error === undefined ? 'the declaration is not valid' : describe(error, declaration)}`)
}
