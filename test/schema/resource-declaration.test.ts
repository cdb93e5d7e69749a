// The declaration's shape, checked by one TypeBox schema (schema/resource-declaration.ts): each
// wrong option is refused at start with one line naming its path and what it must be, never the
// value given; every declaration in use is still accepted.
import t from 'tap'
import { defineResource, Type } from '../../index.js'
import { builtInResources } from '../../rules/built-in-resources.js'
import '../helpers/source-package.js'

const { labels } = await import('../../examples/labels.js')

const representation = Type.Object({ id: Type.Integer(), owner_id: Type.Integer(), name: Type.String() })
const base = { name: 'thing', table: 'things', representation, generated: ['id'], owner: 'owner_id', writable: ['name'] }
const run = async () => ({})
// What a wrong value is made of: no message may repeat it.
const VALUE = 'Secret value'

const wrong: Array<[string, Record<string, unknown>, string]> = [
  ['a typo of an option', { emptyPach: 'unchanged' }, 'emptyPach is not an option of defineResource'],
  ['a required option left out', { table: undefined }, 'table is required'],
  ['a required option of an option left out', { relations: { posts: { manyToMany: 'post', key: 'thing_id', otherKey: 'post_id' } } }, 'relations.posts.through is required'],
  ['a name', { name: VALUE }, 'name must be lower camel case letters and digits'],
  ['a table', { table: VALUE }, 'table must be a lower-case SQL identifier'],
  ['a plural', { plural: VALUE }, 'plural must be lower camel case letters and digits'],
  ['a representation', { representation: Type.String({ default: VALUE }) }, 'representation must be a Type.Object (TypeBox) whose fields are lower-case SQL identifiers'],
  ['a field\'s name', { representation: Type.Object({ id: Type.Integer(), 'Secret value': Type.String() }) }, 'representation must be a Type.Object (TypeBox) whose fields are lower-case SQL identifiers'],
  ['a list of fields', { writable: VALUE }, 'writable must be a list of field names'],
  ['a field of a list', { sort: ['name', 7] }, 'sort[1] must be the name of a field'],
  ['an access rule', { auth: { update: VALUE } }, 'auth.update must be one of authenticated, admin, owner, ownerOrAdmin or false (a change needs a caller: never public)'],
  ['a public change', { auth: { delete: 'public' } }, 'auth.delete must be one of authenticated, admin, owner, ownerOrAdmin or false (a change needs a caller: never public)'],
  ['a read that is false', { auth: { read: false } }, 'auth.read must be one of public, authenticated, admin, owner or ownerOrAdmin (a resource is always readable by someone: never false)'],
  ['an action of auth', { auth: { list: 'admin' } }, 'auth.list is not an action (read, create, update or delete)'],
  ['a relation of two kinds', { relations: { things: { hasMany: 'post', belongsTo: 'user', key: 'thing_id' } } }, 'relations.things must be exactly one of belongsTo, hasMany, hasOne or manyToMany, with its options'],
  ['a relation of no kind', { relations: { things: { key: 'thing_id' } } }, 'relations.things must be exactly one of belongsTo, hasMany, hasOne or manyToMany, with its options'],
  ['an option of another kind', { relations: { owner: { belongsTo: 'user', key: 'owner_id', route: false } } }, 'relations.owner.route is not an option of a belongsTo relation (belongsTo, key, required, under, inverse or include)'],
  ['a relation\'s flag', { relations: { owner: { belongsTo: 'user', key: 'owner_id', required: VALUE } } }, 'relations.owner.required must be true or false'],
  ['a relation\'s column', { relations: { owner: { belongsTo: 'user', key: VALUE } } }, 'relations.owner.key must be a lower-case SQL identifier'],
  ['a relation\'s name', { relations: { Owner: { belongsTo: 'user', key: 'owner_id' } } }, 'relations.Owner: the name must be lower camel case letters and digits'],
  ['a filter\'s operator', { filters: { long: { field: 'name', op: VALUE } } }, 'filters.long.op must be one of =, >=, >, <=, <, positive, caseInsensitive or isNull'],
  ['a filter\'s name', { filters: { Long: { field: 'name' } } }, 'filters.Long: the name must be a lower-case identifier'],
  ['filters of neither form', { filters: VALUE }, 'filters must be a list of field names, or an object of filters by name'],
  ['an event', { events: [VALUE] }, 'events[0] must be one of created, updated or deleted'],
  ['an event by name', { events: { made: {} } }, 'events.made is not an event (created, updated or deleted)'],
  ['a subscription\'s name', { events: { created: { subscription: VALUE } } }, 'events.created.subscription must be lower camel case letters and digits'],
  ['a hook that does not exist', { hooks: { beforeInsert: run } }, 'hooks.beforeInsert is not a hook (prepareCreate, beforeCreate, afterCreate, beforeCreateMany, prepareUpdate, beforeUpdate, afterUpdate, beforeDelete or afterDelete)'],
  ['a hook that is not a function', { hooks: { afterCreate: VALUE } }, 'hooks.afterCreate must be a function'],
  ['an action\'s name', { actions: { 'archive-now': { auth: 'owner', run } } }, 'actions.archive-now: the name must be lower camel case letters and digits'],
  ['an action\'s rule', { actions: { archive: { auth: 'public', run } } }, 'actions.archive.auth must be one of authenticated, admin, owner or ownerOrAdmin'],
  ['an action without run', { actions: { archive: { auth: 'owner' } } }, 'actions.archive.run is required'],
  ['an action\'s input', { actions: { archive: { auth: 'owner', input: Type.Object({ Why: Type.String() }), run } } }, 'actions.archive.input must be a Type.Object with at least one field, each named in lower case (a-z, 0-9, _)'],
  ['a create\'s input', { create: { input: Type.Object({}), run } }, 'create.input must be a Type.Object with at least one field'],
  ['a create limit\'s kind', { createLimit: { kind: VALUE, account: run } }, 'createLimit.kind must be one of login, signUp or resetPassword'],
  ['an input\'s writes', { inputs: { secret: { schema: Type.String(), on: [] } } }, 'inputs.secret.on must be a list of create, update or both'],
  ['an input\'s name', { inputs: { Secret: { schema: Type.String(), on: ['create'] } } }, 'inputs.Secret: the name must be in lower case (a-z, 0-9, _)'],
  ['a loaded field', { loaded: { name: { load: VALUE } } }, 'loaded.name.load must be a function'],
  ['a field rule', { fields: { name: { read: VALUE } } }, 'fields.name.read must be owner or ownerOrAdmin'],
  ['under', { relations: { owner: { belongsTo: 'user', key: 'owner_id', under: VALUE } } }, 'relations.owner.under must be one of also, only or one'],
  ['emptyPatch', { emptyPatch: VALUE }, 'emptyPatch must be unchanged or refused'],
  ['othersRows', { othersRows: VALUE }, 'othersRows must be hidden or forbidden'],
  ['ownerOnCreate', { ownerOnCreate: VALUE }, 'ownerOnCreate must be a function']
]

t.test('each wrong option is refused at start, its path and what it must be named, its value never', async (t) => {
  for (const [what, options, message] of wrong) {
    const name = options.name === VALUE ? '' : '"thing"'
    // An option set to undefined here is one left out of the declaration.
    const declaration = Object.fromEntries(Object.entries({ ...base, ...options }).filter(([, value]) => value !== undefined))
    t.throws(() => defineResource(declaration as unknown as Parameters<typeof defineResource>[0]), { message: `defineResource(${name}): ${message}` }, what)
  }
  t.throws(() => defineResource(null as unknown as Parameters<typeof defineResource>[0]), { message: 'defineResource(): the declaration must be an object of options' })
})

t.test('an option given as undefined is one left out', async (t) => {
  const things = defineResource({ ...base, auth: { update: undefined, delete: 'admin' }, filters: undefined } as Parameters<typeof defineResource>[0])
  t.same(things.auth, { read: 'authenticated', create: 'authenticated', update: 'ownerOrAdmin', delete: 'admin' })
})

t.test('every declaration in use is accepted as it is: the built-ins\' and the example\'s', async (t) => {
  for (const resource of [...builtInResources, labels]) {
    t.doesNotThrow(() => defineResource(resource.declaration as Parameters<typeof defineResource>[0]), resource.name)
  }
})
