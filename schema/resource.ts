import { KindGuard, Type, type Static, type TObject, type TProperties, type TSchema } from '@sinclair/typebox'
import { ListOf, ListQuery, Selectable } from './common.js'
import type { AccessUser } from '../plugins/auth.js'
import type { Generated } from 'kysely'
import type { Db } from '../db/connect.js'
import type { AttemptKind } from '../plugins/rate-limit.js'
import { pluralName, singularName } from './plural.js'
import { checkDeclarationShape, NAME } from './resource-declaration.js'
import { checkBehaviour, type ActionDeclaration, type CreateDeclaration, type ResourceHooks, type WriteCaller } from './resource-hooks.js'
import { keyTypeOf, type Key, type KeyType } from './keys.js'

/** Who may do something to a declared resource. `owner` rules look at the declaration's `owner` column. */
export type AccessRule = 'public' | 'authenticated' | 'admin' | 'owner' | 'ownerOrAdmin'
export type ResourceAction = 'read' | 'create' | 'update' | 'delete'
/** The writes a declared resource may leave unserved with the rule `false`. */
export type ResourceWrite = Exclude<ResourceAction, 'read'>
/**
 * Who may do what to a declared resource: a rule per action; `false` for a write the resource does
 * not offer at all (no route, no mutation, no OpenAPI entry). Reads are always offered.
 */
export type ResourceAuth = { read: AccessRule } & Record<ResourceWrite, AccessRule | false>
/** The bulk writes of a declared resource: whether an array POST creates, and the rule of a change and of a deletion by filter (`false`: not offered). */
export interface ResourceBulk {
  create: boolean | 'inOneStatement'
  update: AccessRule | false
  delete: AccessRule | false
}
/** What a declared resource announces after a write commits: GraphQL subscriptions `labelCreated`… */
export type ResourceEvent = 'created' | 'updated' | 'deleted'
/** What a manyToMany relation announces after a link is made or removed: `taskWatcherLinked`… */
export type LinkEvent = 'linked' | 'unlinked'

/**
 * An event's subscription, when not the default (`labelCreated`, every argument optional).
 * @example { subscription: 'commentAdded', require: ['post_id'] }
 */
export interface EventDeclaration<F extends string = string> {
  /** The subscription's name, and the event bus topic. Default: the resource's name and the event's, `labelCreated`. */
  subscription?: string
  /** Fields a subscriber must give (`postId: ID!`): they hear only of rows with those values. Default: none. */
  require?: readonly F[]
}

/** A declared event, its defaults filled in. */
export interface ResourceEventSpec {
  readonly event: ResourceEvent
  /** The GraphQL subscription and the event bus topic: `labelCreated`. */
  readonly subscription: string
  /** The fields every subscriber gives. */
  readonly require: readonly string[]
}

type Field<R extends TObject> = Extract<keyof Static<R>, string>
/** One way a row is owned (see `ResourceDeclaration.owner`): a field, `relation.column` or a relation's name. */
export type OwnerDeclaration<R extends TObject = TObject> = Field<R> | `${string}.${string}` | (string & Record<never, never>)

/**
 * A table as Kysely types it, from a declaration's representation (for `HostTables`): each field a
 * column of the type the representation gives, the `generated` ones (`G`) left out of an insert at
 * will. The representation's types are the API's: a `timestamptz` it gives as text is read as a
 * `Date` by the driver, which a hand-written column type says (`ColumnType<Date, string, string>`).
 * @example interface HostTables { labels: TableOf<typeof representation, 'id' | 'created_at'> }
 */
export type TableOf<R extends TObject, G extends string = never> = { [F in keyof Static<R>]: F extends G ? Generated<Static<R>[F]> : Static<R>[F] }

/** The caller of a create under the rule `C`: possibly no one where `C` may be `public`, else a user. */
export type CreatorOf<C> = 'public' extends C ? WriteCaller : AccessUser

/**
 * How a list filter compares its field with the value a request gives: `=` (equality); `>=`, `>`,
 * `<=`, `<` (a bound of a range); `positive`, which takes a boolean: `true` keeps the rows whose
 * field is above 0, `false` the others; or `caseInsensitive`, equality of text whatever its case
 * (`lower(field) = lower(value)`: give it an index on `lower(field)`), for emails; or `isNull`, which
 * takes a boolean: `true` keeps the rows whose field is null, `false` the others (every equality
 * filter on a field that may be null has one derived, named `<filter>_null`).
 */
export type FilterOperator = '=' | '>=' | '>' | '<=' | '<' | 'positive' | 'caseInsensitive' | 'isNull'

/** A list filter with a name of its own. @example { field: 'price', op: '>=' } */
export interface FilterDeclaration<F extends string = string> {
  /** The field it looks at. */
  field: F
  /** Default `=`. */
  op?: FilterOperator
  /** What OpenAPI says of the parameter. Default: one derived from the field and the operator. */
  description?: string
}

/** A declared resource's list filter: the query parameter (and, camelCased, the GraphQL argument) `name`. */
export interface ResourceFilter {
  readonly name: string
  readonly field: string
  readonly op: FilterOperator
}

/**
 * How a declared resource reaches another (a declared one, or the built-in `user`, `post`,
 * `comment`): `belongsTo` (this row's `key` names the other's id), `hasMany` and `hasOne` (the
 * other's `key` names this row's id), `manyToMany` through a join table (`key` names this row,
 * `otherKey` the other). `inverse` names the way back, served on the other resource: a list of
 * this resource's rows for a belongsTo or a manyToMany, this resource's row for a hasMany or hasOne.
 * @example { manyToMany: 'post', through: 'post_labels', key: 'label_id', otherKey: 'post_id', inverse: 'labels' }
 */
export type RelationDeclaration = (
  | {
    belongsTo: string
    key: string
    /**
     * Every row has one: its key is a non-null foreign key, so GraphQL says `User!` rather than `User`.
     * Its target may not be read by its owners only (the row could be hidden). Default: true under
     * `under: 'only'` or `'one'` (the rows always have the row they live under), else false: a key that is never null may
     * still name a row that is gone (no foreign key) or hidden, which GraphQL would answer with an
     * error in place of the row that has the relation, so it is said, not guessed from the key.
     */
    required?: boolean
    /**
     * How the rows are served under the row they belong to:
     * - `'also'`: listed under it too. `GET /{target plural}/{id}/{plural}` is the resource's own list
     *   of that row's rows, with every list parameter and `include=` (a filter on the key is the
     *   path's), 404 naming the target when there is none, and the cursors of the declared equality
     *   filter on the key when there is one (`GET /users/3/posts` continues `GET /posts?author_id=3`).
     *   A caller whose read rule shows them their own rows only, asking for another owner's: 403. The
     *   target's list relation of the same name and key (the users' `posts`) has no route of its own.
     * - `'only'`: the rows live under it. Listed there as with `'also'`, and created at
     *   `POST /{target plural}/{id}/{plural}` (the key from the path; 404 naming the target when it is
     *   not there; `POST /{plural}` is not served). GraphQL's create input takes the key (`postId: ID!`).
     *   The key is neither writable nor the owner, and is a foreign key of the table.
     * - `'one'`: the resource is singular: one row per target row, whose key (this relation's `key`, an
     *   integer, generated) names it — the resource has no `id` — served at
     *   `GET/PUT/PATCH /{target plural}/{id}/{name}`, 404 naming the target when there is none. The row
     *   is made and removed with its target (the target's hook, code or foreign key), so there is no
     *   list, create or delete; `auth` gives `read` and `update` (and `false` or nothing for the
     *   others). The target gains the relation `{name}` (`include=profile`, `User.profile`), and GraphQL
     *   has `{name}({key}: ID!)` and `update{Type}({key}: ID!, input)`. Owner rules look at the key when
     *   it is the `owner` (`owner: 'user_id'`), before the row is read: a caller who may not change it
     *   gets 403 whether the target exists or not (404 when an owner read rule hides the row from them,
     *   as a read answers). Its other relations are `belongsTo`s without `inverse` or `under`; `events`
     *   may only be `updated`.
     * With `'only'` or `'one'` the relation is `required` (its key never null), and at most one relation
     * of a resource has either. Default: neither (the rows are listed at `/{plural}` alone).
     */
    under?: 'also' | 'only' | 'one'
  }
  | {
    hasMany: string
    key: string
    /**
     * `false`: no `GET /{plural}/{id}/{name}` for it, when a route of your own serves that path.
     * Default: true, and false when the other resource lives `under` this one by the same key and
     * its plural is the relation's name (a post's `comments`): its own list serves that path.
     */
    route?: boolean
  }
  | { hasOne: string, key: string }
  | {
    manyToMany: string
    through: string
    key: string
    otherKey: string
    /** `false`: no `GET /{plural}/{id}/{name}` for it, when a route of your own serves that path. Default: true. */
    route?: boolean
    /**
     * Who may link and unlink rows through the API: `PUT` and `DELETE /{plural}/{id}/{name}/{otherId}`
     * (`PUT /tasks/3/watchers/7`), GraphQL `link{Type}{Singular}` and `unlink{Type}{Singular}`
     * (`linkTaskWatcher(taskId, userId)`). A rule as `auth.update`'s, owner rules looking at this
     * resource's row, locked; this row and the other must both be rows the caller may read (else 404).
     * `false`: links are not written through the API. Default: the resource's `auth.update` rule.
     * @example 'authenticated'
     */
    links?: Exclude<AccessRule, 'public'> | false
    /**
     * Announced after a link is made (`linked`) or removed (`unlinked`), never as the resource's
     * `updated` (its row did not change): the subscriptions `{name}{Singular}Linked` and
     * `{name}{Singular}Unlinked` (`taskWatcherLinked(taskId: ID, userId: ID): TaskWatcherLink!`).
     * Default: none.
     * @example ['linked', 'unlinked']
     */
    events?: readonly LinkEvent[]
  }
) & {
  /** The relation's name on the other resource (`GET /posts/{id}/labels`, `include=labels`, `Post.labels`). @example 'labels' */
  inverse?: string
  /** `false`: REST's `include=` does not offer it (it stays a GraphQL field, and a list relation's nested route). Default: true. */
  include?: boolean
}

/**
 * A field of the representation that is not a column of the table, loaded with the rows (an order's
 * `items`, from another table).
 * @example { load: async (db, ids) => itemsByOrder(db, ids) }
 */
export interface LoadedField<K extends Key = Key> {
  /**
   * The field's value for each of `ids` (a whole page's rows, or one), by id: one statement for them
   * all, never one per row. The ids are the keys as the representation has them: numbers for an
   * integer key, text for a bigint, uuid or text one. A row missing from the map gets null. `db` is
   * the write's transaction when the rows were just written.
   */
  load: (db: Db, ids: readonly K[]) => Promise<ReadonlyMap<K, unknown>>
}

/** A row's key as `load` gets it: the type of the representation's `id` (any key type without one). */
export type KeyOf<R extends TObject> = Static<R> extends { id: infer I extends Key } ? I : Key

/**
 * Who may read a field beyond the resource's read rule: the row's owner (`owner`), or its owner and
 * administrators (`ownerOrAdmin`). Every other caller gets the row with the field null.
 */
export type FieldReadRule = 'owner' | 'ownerOrAdmin'

/**
 * A rule of one field of the representation.
 * @example { read: 'ownerOrAdmin' }
 */
export interface FieldDeclaration {
  read: FieldReadRule
}

/** A resource's field rules: the column that names each row's owner, and the rule of each field that has one. */
export interface FieldRules {
  readonly owner: string
  readonly fields: Readonly<Record<string, FieldReadRule>>
}

/** The writes a write-only input is taken by. */
export type InputWrite = 'create' | 'update'

/**
 * A field that create or update bodies take but that is not a column of the representation (a
 * password): checked by its schema (`Type.Optional(…)` to let it be left out; a PATCH may always leave
 * it out), handed to the write's hooks as `input`, never written nor answered as it is.
 * @example { schema: Type.Optional(Type.String({ minLength: 8 })), on: ['create'] }
 */
export interface InputDeclaration {
  schema: TSchema
  /** The writes whose bodies take it. */
  on: readonly InputWrite[]
  /** Its name in GraphQL inputs. Default: the name in camelCase (`current_password` → `currentPassword`). */
  graphqlName?: string
}

/**
 * What a host writes to give one of its tables every convention of the API (CONTRACT §9). Its type
 * arguments are inferred by `defineResource`: the representation `R`, and the create's rule `C`,
 * which says whether a create's hooks may have no caller (`public`).
 */
export interface ResourceDeclaration<R extends TObject = TObject, C extends AccessRule | false = AccessRule | false> {
  /** Singular, lower camel case: `label` → REST `/labels`. @example 'label' */
  name: string
  /**
   * The plural in paths and GraphQL names (`/entries`, `entries`, `createEntries`), when not the
   * English plural of `name` (inflection's rules, on the last word of a camelCase name: `entry` →
   * `entries`, `person` → `people`, `lineItem` → `lineItems`). Needed for a word English does not count
   * (`news`), whose plural would be its name, and where the rules miss (they make `safe` `saves`).
   * @example 'safes'
   */
  plural?: string
  /** The table, made by the host's own migration. @example 'labels' */
  table: string
  /** The representation (snake_case fields, as REST shows them), its key (`id`) included. */
  representation: R
  /** Fields the database sets (never accepted in a body). @example ['id', 'created_at'] */
  generated: ReadonlyArray<Field<R>>
  /**
   * Who owns a row, what `owner` rules (`auth`, actions, `bulk`) look at: the column that names the
   * owning user, set to the caller on create (`'id'` when each row is a user's own, an account: `owner`
   * rules then mean the user itself, and a create sets no owner, so it may be `public`, a sign-up); or
   * a path through a relation: `'project.owner_id'`, the owner column of the row's `belongsTo` target
   * (the parent's owner), or `'watchers'`, a `manyToMany` relation (a user it links to the row; to a
   * resource with an owner: that row's owner, as `'teams.owner_id'` says it), or a `belongsTo` to users
   * by its name; or several of them, any of which owns the row (`['assignee_id', 'project.owner_id']`).
   * At most one is a column of the row (the one a create sets to the caller); without one, a create
   * must name a parent its caller owns (422 naming the key otherwise; administrators may name any).
   * Through a relation, reads are narrowed and writes checked on the locked row by one `exists`
   * statement per path (index the join table's two keys). Field rules (`fields`) need a column.
   * @example 'owner_id'
   * @example ['assignee_id', 'project.owner_id', 'watchers']
   */
  owner?: OwnerDeclaration<R> | readonly [OwnerDeclaration<R>, ...Array<OwnerDeclaration<R>>]
  /**
   * Lets a create name the owner (`author_id` in the body, `authorId` in GraphQL; optional): called
   * with the caller and the owner named (undefined when left out), it returns the owner to write, or
   * throws one of the package's errors (`forbidden`) to refuse the create. Without it the owner is
   * always the caller.
   * @example
   * (caller, named) => {
   *   if (named !== undefined && named !== caller.sub && caller.role !== 'admin') throw forbidden('only an administrator may post as another user')
   *   return named ?? caller.sub
   * }
   */
  ownerOnCreate?: (caller: AccessUser, named: number | undefined) => number
  /**
   * Fields of the representation that are not columns, each loaded for a whole page at once (one
   * extra statement per page, in both styles, and for the row a write answers unless the write's
   * code returned it with the field): `fields=` may name them; they are neither sorted, filtered,
   * searched nor written. In GraphQL an object (or a list of objects) is a type named by its
   * schema's `title`, else `{Type}{Field}` (`OrderItems`).
   * @example { items: { load: itemsOf } }
   */
  loaded?: Readonly<Partial<Record<Field<R>, LoadedField<KeyOf<R>>>>>
  /**
   * Fields of POST/PUT/PATCH bodies (may be empty when `create` says what a create takes). A field whose schema accepts null may be left out of a create
   * or a PUT (it is then null); one whose schema has a `default` may be left out of a create (it
   * then takes the default), but a PUT must give it, so that a replace never resets it by accident.
   * A writable key of a `belongsTo` may only name a row the caller may read: where its target is
   * read by its owners only, another's row is a 422 naming the field, as a missing one is.
   */
  writable: ReadonlyArray<Field<R>>
  /**
   * Fields of bodies that are not columns (write-only): each handed to the hooks of the writes it is
   * `on` as `input`, which make of it what is written (a password's hash). A create input needs a
   * create hook (`prepareCreate`, `beforeCreate`, `afterCreate`), an update input an update hook.
   * Their schemas are marked `writeOnly`, and an Idempotency-Key's fingerprint leaves them out: nothing
   * stored tests a guess of them.
   * @example { password: { schema: Type.Optional(Password), on: ['create'] } }
   */
  inputs?: Readonly<Record<string, InputDeclaration>>
  /**
   * Counts each create, in both styles, against the attempt limits of `kind` (per address, and per
   * address and account: `signUp` is the sign-up's, `login` the sign-in's), as the built-in sign-up is
   * counted: 429 with `Retry-After` beyond. `account` names, from the checked body, the account it is for.
   * @example { kind: 'signUp', account: (body) => String(body.email) }
   */
  createLimit?: { kind: AttemptKind, account: (body: Readonly<Record<string, unknown>>) => string }
  /** Fields lists may be sorted by (`id` always may). */
  sort?: ReadonlyArray<Field<R>>
  /**
   * Filters of lists: equality on these fields (`['owner_id']`: `?owner_id=3`), or filters by name,
   * each a field and an operator (`FilterOperator`): `{ category: { field: 'category' }, price_min:
   * { field: 'price', op: '>=' }, in_stock: { field: 'stock', op: 'positive' } }`. A lower bound
   * above an upper bound of the same field (`price_min=50&price_max=10`) is a 422 naming the lower.
   */
  filters?: ReadonlyArray<Field<R>> | Readonly<Record<string, FilterDeclaration<Field<R>>>>
  /** Text fields `q=` searches (give them a trigram index in the migration). */
  search?: ReadonlyArray<Field<R>>
  /**
   * What `PATCH {}` (and an empty GraphQL update) does: `unchanged`, the row as it is, after the rules
   * of any update (the owner check on the locked row, `If-Match`, the update hooks with no values;
   * `updated` announced), or `refused`, a 400. Default: `unchanged`.
   * @example 'refused'
   */
  emptyPatch?: 'refused' | 'unchanged'
  /**
   * Under an owner read rule, what a single read of another owner's row answers: `hidden`, a 404 as
   * if there were no such row (lists leave it out alike), or `forbidden`, a 403. A change the rules
   * refuse on such a row (update, delete, action) is answered the same way: under `hidden`, as no
   * such row (404; GraphQL `NOT_FOUND`, or `false` from a delete). Default: `hidden`. @example 'forbidden'
   */
  othersRows?: 'hidden' | 'forbidden'
  /**
   * Field rules: a field read by the row's owner (`owner`, the declaration's `owner` column names
   * them) or by its owner and administrators (`ownerOrAdmin`) only. Every other caller gets the row
   * with that field null, wherever the row appears: lists and single reads, `include=` and relations
   * at any depth in GraphQL, write answers, subscriptions (each subscriber sees it as its own rule
   * says). Answers' schemas and GraphQL types have the field nullable. A list filter on the field
   * matches only the caller's own rows, and `q` looks only at the search fields the caller reads on
   * every row (only their own rows when there is none), so that neither tells another row's value.
   * The field cannot be sorted by, nor be the key of a relation or a required event argument. A
   * create answers its caller the row whole: they wrote it.
   * @example { email: { read: 'ownerOrAdmin' } }
   */
  fields?: Readonly<Partial<Record<Field<R>, FieldDeclaration>>>
  /**
   * Who may do what. Default: `authenticated` reads and creates, `ownerOrAdmin` (or `admin` without an
   * owner) changes. `false` for `create`, `update` or `delete`: the resource does not offer that write
   * at all: no REST route (404, as any unknown path), no GraphQL mutation, no OpenAPI entry, and no
   * event of it (declaring one is a mistake). `read` cannot be `false`. `create: 'public'` (no token:
   * a sign-up) only when a create sets no owner (no `owner`, or `owner: 'id'`); changes are never public.
   * @example { read: 'authenticated', create: 'authenticated', update: false, delete: 'ownerOrAdmin' }
   */
  auth?: { read?: AccessRule, create?: C, update?: AccessRule | false, delete?: AccessRule | false }
  /** Other resources this one reaches: `include=` embeds them, and lists of them are served under `/{plural}/{id}/{relation}`. */
  relations?: Readonly<Record<string, RelationDeclaration>>
  /**
   * Announced after the write commits, to the subscriptions `labelCreated`, `labelUpdated`, `labelDeleted`
   * (the equality filters as optional arguments); or by event, with a subscription's own name and
   * required arguments: `{ created: { subscription: 'commentAdded', require: ['post_id'] } }`. Default: none.
   */
  events?: readonly ResourceEvent[] | Readonly<Partial<Record<ResourceEvent, EventDeclaration<Field<R>>>>>
  /**
   * Writes of many rows in one request (CONTRACT §14). An array `POST /{plural}` (GraphQL
   * `create{Plural}(inputs:)`) creates its items in one transaction under the create's rules; `create:
   * false` refuses arrays (400), for creates that must stay one by one (a sign-up). `update` and
   * `delete`, each a rule as `auth`'s, offer `PATCH /{plural}?<filters>` and `DELETE /{plural}?<filters>`
   * (GraphQL `update{Plural}(where:, input:)`, `delete{Plural}(where:)`): at least one declared filter,
   * each row under the resource's own rules too, owner rules narrowing to the caller's rows. Default:
   * arrays created, no change or deletion by filter. `create: 'inOneStatement'` inserts a batch's rows in
   * one statement once every item's `beforeCreate` has run (then each `afterCreate`), about ten times
   * faster a row: a hook then does not see the rows of the batch's other items (a quota a hook counts
   * must count `inputs` in `beforeCreateMany` too). Not with a declaration's own `create` (its `runMany` is that).
   * @example { update: 'admin', delete: 'owner' }
   */
  bulk?: { create?: boolean | 'inOneStatement', update?: Exclude<AccessRule, 'public'> | false, delete?: Exclude<AccessRule, 'public'> | false }
  /** A create that takes a body of its own and writes the row itself (see `CreateDeclaration`). */
  create?: CreateDeclaration<Static<R>, CreatorOf<C>>
  /** Business rules inside the writes' transactions, in both styles (see `ResourceHooks`). */
  hooks?: ResourceHooks<Static<R>, CreatorOf<C>>
  /**
   * What may be done to one row beyond changing it: `POST /{plural}/{id}/{name}` and the mutation
   * `{name}{Type}`; an `updated` event, when declared, is announced after each. Names are lower camel
   * case, and neither a relation's nor `create`, `update`, `delete`. @example { archive: { auth: 'owner', run } }
   */
  actions?: Readonly<Record<string, ActionDeclaration<Static<R>>>>
}

/**
 * A declared resource: the declaration checked and normalised once (every default filled in), and the
 * contracts derived from it. Everything downstream reads these fields, never `declaration`.
 */
export interface Resource<R extends TObject = TObject> {
  /** The declaration as given: what another declaration may be derived from (`{ ...labels.declaration, … }`). */
  readonly declaration: Readonly<ResourceDeclaration>
  readonly representation: R
  readonly name: string
  /** The path segment: `labels`. */
  readonly plural: string
  readonly table: string
  /** The column that names a row: `id`, or a singular resource's declared `key`. */
  readonly key: string
  /**
   * The type of the key, read from its schema in the representation: `Type.Integer()` (integer),
   * `Type.String({ format: 'int64' })` (bigint, shown as its decimal text), `Type.String({ format:
   * 'uuid' })` (uuid), `Type.String()` (text). Paths, cursors, filters, relations and GraphQL `ID`s
   * take and give keys of this type.
   */
  readonly keyType: KeyType
  /** Columns of the representation, the key first (its loaded fields are not columns). */
  readonly columns: readonly string[]
  /** The representation's fields that are loaded rather than read from the table. */
  readonly loaded: readonly string[]
  /** The rule of each action; `false`: that write is not served. */
  readonly auth: Readonly<ResourceAuth>
  /** The list filters, in the declaration's order (an equality filter is named after its field). */
  readonly filters: readonly ResourceFilter[]
  /** The declared events, with their subscriptions. */
  readonly events: readonly ResourceEventSpec[]
  /** The bulk writes it offers (`bulk`, its defaults filled in): arrays created or not, a rule or `false` for a change and a deletion by filter. */
  readonly bulk: Readonly<ResourceBulk>
  /** The `under` relation: the rows live under the row it names. */
  readonly under?: { readonly relation: string, readonly key: string, readonly target: string }
  /**
   * The belongsTo relations whose rows are listed under their target's path (`under: 'also'` or `'only'`), each
   * with the list filter that names one target's rows: the declared equality filter on its key, else
   * one of its own (`$parent` for `under`'s, `$parent:{key}` for the others').
   */
  readonly listedUnder: readonly ListedUnder[]
  /** The field rules (`fields`), when the declaration has any. */
  readonly fieldRules?: FieldRules
  /** The column of the row that names its owning user (`owner`, or the one column among its paths); the key itself when each row is its user's own. */
  readonly owner?: string
  /**
   * Every way a row is owned, as declared (`owner`: a column, `relation.column` or a relation's name):
   * empty when it has no owner. Resolved through the relations' targets at start (schema/owners.ts).
   */
  readonly owners: readonly string[]
  /** Fields of bodies (`writable`). */
  readonly writable: readonly string[]
  /** Text fields `q=` searches (`search`; none: no `q`). */
  readonly search: readonly string[]
  /** Write-only inputs of bodies (`inputs`), by name. */
  readonly inputs: Readonly<Record<string, InputDeclaration>>
  /** How each loaded field is loaded (`loaded`), by field. */
  readonly loaders: Readonly<Record<string, LoadedField>>
  /** The declared relations, by name, as declared (`relations`). */
  readonly relations: Readonly<Record<string, RelationDeclaration>>
  /** A create of its own (`create`). */
  readonly create?: CreateDeclaration
  /** Lets a create name the owner (`ownerOnCreate`). */
  readonly ownerOnCreate?: (caller: AccessUser, named: number | undefined) => number
  /** The creates counted as attempts (`createLimit`). */
  readonly createLimit?: { kind: AttemptKind, account: (body: Readonly<Record<string, unknown>>) => string }
  /** The hooks (`hooks`; none: `{}`). */
  readonly hooks: Readonly<ResourceHooks>
  /** The actions, by name (`actions`; none: `{}`). */
  readonly actions: Readonly<Record<string, ActionDeclaration>>
  /** What a read of another owner's row answers under an owner read rule (`othersRows`, default `hidden`). */
  readonly othersRows: 'hidden' | 'forbidden'
  /** What `PATCH {}` does (`emptyPatch`, default `unchanged`). */
  readonly emptyPatch: 'refused' | 'unchanged'
  /** The resource this one is singular of (`singularOf`): its parent's name. */
  readonly singularOf?: string
  readonly schemas: {
    /** The whole representation: what writes answer. */
    item: TObject
    /** As `fields=` narrows it: what reads answer. */
    selection: TSchema
    list: TSchema
    listQuery: TSchema
    create: TObject
    replace: TObject
    patch: TObject
  }
}

/** A belongsTo relation whose rows are listed under their target's path (`under: 'also'` or `'only'`). */
export interface ListedUnder {
  readonly relation: string
  readonly key: string
  /** The target's name. */
  readonly target: string
  /** The list filter that names one target's rows. */
  readonly filter: string
}

/** The row type a declaration's representation describes. */
export type RowOf<T> = T extends Resource<infer R> ? Static<R> : never

// Query parameters and GraphQL arguments of every list: a filter of the same name would shadow them.
const LIST_PARAMETERS = ['limit', 'cursor', 'page', 'offset', 'sort', 'order', 'total', 'fields', 'include', 'q', 'version', 'first', 'after']
// The GraphQL types of the schema that a declared type would collide with. The built-in resources'
// names are taken when they are served (rules/built-in-resources.ts), as any two resources' are.
const TAKEN_NAMES = ['dateTime', 'pageInfo', 'authPayload', 'bulkChange', 'query', 'mutation', 'subscription']
const camelCased = (name: string): string => name.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase())

/** The schema without its `null` branch: what a filter value in a query string is. */
export function nonNull (schema: TSchema): TSchema {
  const anyOf = (schema as { anyOf?: TSchema[] }).anyOf
  if (anyOf === undefined) return schema
  const rest = anyOf.filter((branch) => (branch as { type?: unknown }).type !== 'null')
  return rest.length === 1 ? rest[0] as TSchema : Type.Union(rest)
}

/** Whether `schema` admits null (a nullable column). */
export function acceptsNull (schema: TSchema): boolean {
  const anyOf = (schema as { anyOf?: TSchema[] }).anyOf
  return (schema as { type?: unknown }).type === 'null' || (anyOf?.some((branch) => (branch as { type?: unknown }).type === 'null') ?? false)
}

function check (condition: boolean, declaration: { name: string }, message: string): asserts condition {
  if (!condition) throw new Error(`defineResource(${JSON.stringify(declaration.name)}): ${message}`)
}

/** The schema without its `default`: only a create fills a field in; a PATCH, a filter or an answer never does. */
function withoutDefault (schema: TSchema): TSchema {
  if (!('default' in schema)) return schema
  const { default: _default, ...rest } = schema
  return rest as TSchema
}

/** The declaration's events, their defaults filled in. */
function eventsOf (declaration: Pick<ResourceDeclaration, 'name' | 'events'>): ResourceEventSpec[] {
  const given = declaration.events ?? []
  const byEvent: Array<[ResourceEvent, EventDeclaration | undefined]> = Array.isArray(given)
    ? (given as readonly ResourceEvent[]).map((event) => [event, undefined])
    : Object.entries(given as Readonly<Record<ResourceEvent, EventDeclaration | undefined>>) as Array<[ResourceEvent, EventDeclaration | undefined]>
  return byEvent.map(([event, declared]) => ({
    event,
    subscription: declared?.subscription ?? `${declaration.name}${String(event).charAt(0).toUpperCase()}${String(event).slice(1)}`,
    require: declared?.require ?? []
  }))
}

/** The declaration's filters, one per query parameter. */
function filtersOf (declared: ReadonlyArray<string> | Readonly<Record<string, FilterDeclaration>> = []): ResourceFilter[] {
  if (Array.isArray(declared)) return declared.map((field: string) => ({ name: field, field, op: '=' }))
  return Object.entries(declared as Readonly<Record<string, FilterDeclaration>>).map(([name, filter]) => ({ name, field: filter.field, op: filter.op ?? '=' }))
}

/**
 * The NULL filter of an equality filter on a field that may be null: `?assignee_id_null=true` lists
 * the rows whose field is null (GraphQL `assigneeIdNull: true`, or `assigneeId: null`). A parameter of
 * its own, so that no value of the field (the text "null") can be taken for it.
 */
export const nullFilterName = (filter: string): string => `${filter}_null`

/** The declared filters and the NULL filter derived from each equality filter on a nullable field, unless one of that name is declared. */
function withNullFilters (filters: readonly ResourceFilter[], properties: TProperties): ResourceFilter[] {
  const derived = filters
    .filter(({ field, op }) => op === '=' && properties[field] !== undefined && acceptsNull(properties[field]))
    .map(({ name, field }): ResourceFilter => ({ name: nullFilterName(name), field, op: 'isNull' }))
    .filter(({ name }) => !filters.some((declared) => declared.name === name))
  return [...filters, ...derived]
}

const BOUNDS: Partial<Record<FilterOperator, string>> = { '>=': 'Lowest', '>': 'Above', '<=': 'Highest', '<': 'Below' }

/** The query parameter of one filter: the field's own schema, or a boolean for `positive`. */
function filterSchema (filter: ResourceFilter, field: TSchema, description: string | undefined): TSchema {
  if (filter.op === 'positive') return Type.Boolean({ description: description ?? `\`true\`: only those whose ${filter.field} is above 0; \`false\`: the others.` })
  if (filter.op === 'isNull') return Type.Boolean({ description: description ?? `\`true\`: only those whose ${filter.field} is null; \`false\`: the others.` })
  const schema = withoutDefault(nonNull(field))
  const bound = BOUNDS[filter.op]
  const said = description ?? (bound === undefined ? undefined : `${bound} ${filter.field}${filter.op.endsWith('=') ? ', inclusive' : ''}.`)
  return said === undefined ? schema : { ...schema, description: said }
}

/**
 * The declaration's owners (`owner`), as a list, each checked against what the declaration alone can
 * tell: a field of the representation, a declared `belongsTo` or `manyToMany` relation, or such a
 * relation's `relation.column` (the target's column is checked at start, with the targets: schema/owners.ts).
 */
function ownersOf<R extends TObject, C extends AccessRule | false> (declaration: ResourceDeclaration<R, C>, properties: TProperties): string[] {
  const { owner } = declaration
  const owners: string[] = owner === undefined ? [] : typeof owner === 'string' ? [owner] : [...owner as readonly string[]]
  const relations = declaration.relations ?? {}
  for (const path of owners) {
    check(owners.indexOf(path) === owners.lastIndexOf(path), declaration, `owner names ${path} twice`)
    const [name, column] = path.split('.') as [string, string | undefined]
    if (column === undefined && Object.hasOwn(properties, name)) continue
    const relation = Object.hasOwn(relations, name) ? relations[name] : undefined
    check(relation !== undefined, declaration, column === undefined ? `owner names ${path}, which is neither a field nor a relation` : `owner: ${path} names the relation ${name}, which is not declared`)
    check('belongsTo' in (relation as RelationDeclaration) || 'manyToMany' in (relation as RelationDeclaration), declaration, `owner: ${path} goes through ${name}, which is not a belongsTo or a manyToMany relation`)
  }
  const columns = owners.filter((path) => Object.hasOwn(properties, path))
  check(columns.length <= 1, declaration, `owner names ${columns.length} columns of the row (${columns.join(', ')}): at most one, the one a create sets to the caller; give the others through their relation`)
  check(!columns.includes('id') || owners.length === 1, declaration, 'owner: id (each row its user\'s own) is the only owner of a row')
  return owners
}

/** The declaration's field rules, checked: undefined when it has none. */
function fieldRulesOf<R extends TObject, C extends AccessRule | false> (declaration: ResourceDeclaration<R, C>, key: string, events: readonly ResourceEventSpec[], owners: readonly string[]): FieldRules | undefined {
  const declared = Object.entries(declaration.fields ?? {}) as Array<[string, FieldDeclaration | undefined]>
  if (declared.length === 0) return undefined
  const [owner] = owners
  check(owner !== undefined, declaration, 'fields: a field read rule needs an `owner` field, whose rows it gives to their owner')
  // A field is shown or hidden row by row from the row's own owner column: a path through a relation cannot tell from the row.
  check(owners.length === 1 && Object.hasOwn(declaration.representation.properties, owner), declaration, 'fields: a field read rule needs an `owner` that is one column of the row; an owner through a relation (or several) cannot be told from the row')
  const keys = Object.values(declaration.relations ?? {}).filter((relation) => 'belongsTo' in relation).map((relation) => relation.key)
  const rules: Record<string, FieldReadRule> = {}
  for (const [field, rule] of declared) {
    check(Object.hasOwn(declaration.representation.properties, field), declaration, `fields names ${field}, which is not in the representation`)
    check(field !== key && field !== owner, declaration, `fields: ${field} names the rows or their owner: it cannot be hidden`)
    // Each would tell a caller the hidden value: by the order of rows, a row found by it, or the events heard.
    check(!(declaration.sort ?? []).includes(field as Field<R>), declaration, `fields: ${field} has a read rule, so lists cannot be sorted by it`)
    check(!keys.includes(field), declaration, `fields: ${field} has a read rule, so it cannot be the key of a relation`)
    check(events.every(({ require }) => !require.includes(field)), declaration, `fields: ${field} has a read rule, so a subscription cannot require it`)
    rules[field] = (rule as FieldDeclaration).read
  }
  return Object.freeze({ owner, fields: Object.freeze(rules) })
}

/** A belongsTo relation's `under`, read from any relation's declaration. */
const underOf = (declared: RelationDeclaration): 'also' | 'only' | 'one' | undefined => 'belongsTo' in declared ? declared.under : undefined

/**
 * Throws on what a singular resource (a relation `under: 'one'`, `one`: its name and declaration)
 * cannot have: a resource without a list of its own, made and removed with its parent.
 */
function checkSingular<R extends TObject, C extends AccessRule | false> (declaration: ResourceDeclaration<R, C>, one: readonly [string, RelationDeclaration & { belongsTo: string }], properties: TProperties): void {
  const [name, { belongsTo: parent, key }] = one
  check(parent !== declaration.name, declaration, `relation ${name}: a resource cannot be one under itself`)
  check(properties.id === undefined, declaration, `relation ${name}: a resource one under its parent is named by ${key}, its parent's id: the representation has no id`)
  check(Object.hasOwn(properties, key) && (nonNull(properties[key] as TSchema) as { type?: unknown }).type === 'integer' && !acceptsNull(properties[key] as TSchema), declaration, `relation ${name}: the key ${key} must be a non-null integer: the parent's id`)
  for (const option of ['sort', 'filters', 'search', 'ownerOnCreate'] as const) {
    check(declaration[option] === undefined, declaration, `a resource one under its parent has no list nor create: ${option} does not apply`)
  }
  // `false` is how an operation is left out; a singular resource has none of these to leave.
  for (const action of ['create', 'delete'] as const) {
    const rule: unknown = declaration.auth?.[action]
    check(rule === undefined || rule === false, declaration, `a resource one under its parent is made and removed with it: auth.${action} does not apply`)
  }
  for (const [relation, declared] of Object.entries(declaration.relations ?? {})) {
    check('belongsTo' in declared && declared.inverse === undefined, declaration, `relation ${relation}: the relations of a resource one under its parent are belongsTo, without inverse (its parent reaches it)`)
    check(relation === name || underOf(declared) === undefined, declaration, `relation ${relation}: a resource one under its parent is never listed under another: under does not apply`)
  }
  for (const { event } of eventsOf(declaration)) check(event === 'updated', declaration, `a resource one under its parent is never ${event} on its own: only updated may be announced`)
  for (const hook of ['beforeCreate', 'afterCreate', 'beforeCreateMany', 'beforeDelete', 'afterDelete']) {
    check((declaration.hooks as Record<string, unknown> | undefined)?.[hook] === undefined, declaration, `a resource one under its parent has no create nor delete: hook ${hook} would never run`)
  }
}

/**
 * Declares a resource once: REST routes, validation, OpenAPI entries and access rules are derived
 * from it (pass it to `tandem`'s `resources`). Mistakes in the declaration throw here, at start.
 * @example
 * const labels = defineResource({ name: 'label', table: 'labels', representation, generated: ['id', 'created_at'], owner: 'owner_id', writable: ['name', 'color'] })
 */
export function defineResource<R extends TObject, C extends AccessRule | false = 'authenticated'> (declaration: ResourceDeclaration<R, C>): Resource<R> {
  // A key of several columns has no one value a path, a cursor or an `ID` could name a row by. Said
  // before the shape's check (which would call it no field name), naming the resource only when it is a name.
  const { key: composite, name: given } = (typeof declaration === 'object' && declaration !== null ? declaration : {}) as { key?: unknown, name?: unknown }
  if (Array.isArray(composite)) throw new Error(`defineResource(${typeof given === 'string' && NAME.test(given) ? JSON.stringify(given) : ''}): a composite key cannot be served: give the table a key of one column (integer, bigint, uuid or text)`)
  // Every option's type first: what follows looks across options only.
  checkDeclarationShape(declaration)
  const { name, table, representation } = declaration
  check(!TAKEN_NAMES.includes(name), declaration, `the name ${name} is taken by a built-in resource or GraphQL type`)
  const plural = declaration.plural ?? pluralName(name)
  // The relation a singular resource lives under, one row per row of its target: its key names the rows.
  const ones = Object.entries(declaration.relations ?? {}).filter((entry): entry is [string, RelationDeclaration & { belongsTo: string }] => underOf(entry[1]) === 'one')
  check(ones.length <= 1, declaration, `only one relation may be under: 'one': ${ones.map(([relation]) => relation).join(', ')}`)
  const [one] = ones
  // GraphQL would name one row and the list alike (`news(id)`, `news(limit)`); a singular resource has no list.
  check(plural !== name || one !== undefined, declaration, declaration.plural === undefined
    ? `${name} is its own plural in English: give \`plural\`, a name of its list other than ${name}`
    : `plural: ${plural} is the resource's name; the list needs a name of its own`)
  const properties: TProperties = representation.properties
  if (one !== undefined) checkSingular(declaration, one, properties)
  const key: string = one?.[1].key ?? 'id'
  const fields = [key, ...Object.keys(properties).filter((column) => column !== key)]
  const loaded = Object.keys(declaration.loaded ?? {})
  const columns = fields.filter((field) => !loaded.includes(field))
  check(properties[key] !== undefined, declaration, 'the representation needs an `id`')
  const keyType = keyTypeOf(properties[key])
  if (typeof keyType !== 'string') check(false, declaration, `the key ${key} is ${keyType.refused}, which cannot name a row: a key is Type.Integer() (integer), Type.String({ format: 'int64' }) (bigint), Type.String({ format: 'uuid' }) (uuid) or Type.String() (text)`)
  const known = (list: readonly string[] | undefined, what: string) => {
    for (const field of list ?? []) check(Object.hasOwn(properties, field), declaration, `${what} names ${field}, which is not in the representation`)
  }
  known(declaration.generated, 'generated')
  known(declaration.writable, 'writable')
  known(declaration.sort, 'sort')
  const filters = withNullFilters(filtersOf(declaration.filters), properties)
  known(filters.map((filter) => filter.field), 'filters')
  known(declaration.search, 'search')
  const owners = ownersOf(declaration, properties)
  // The row's own owner column, when a path is one: what a create sets to the caller.
  const ownerColumn = owners.find((owner) => Object.hasOwn(properties, owner))
  known(loaded, 'loaded')
  for (const field of loaded) {
    const uses = [['generated', declaration.generated], ['writable', declaration.writable], ['sort', declaration.sort], ['filters', filters.map((filter) => filter.field)], ['search', declaration.search], ['owner', [ownerColumn]]] as const
    for (const [what, list] of uses) check(!(list as ReadonlyArray<string | undefined> | undefined ?? []).includes(field), declaration, `${field} is loaded, so it cannot be ${what === 'owner' ? 'the owner' : `in ${what}`}`)
  }
  check(declaration.generated.includes(key as Field<R>), declaration, `\`${key}\` must be generated`)
  for (const field of declaration.writable) {
    check(!declaration.generated.includes(field), declaration, `${field} is both generated and writable`)
    check(field !== ownerColumn, declaration, `${field} is the owner: it is set to the caller, never written`)
  }
  check(declaration.ownerOnCreate === undefined || ownerColumn !== undefined, declaration, 'ownerOnCreate needs an `owner` column of the row')
  // An owner column holds a user's id, which owner rules compare with the caller's: users' ids are integers.
  check(ownerColumn === undefined || (nonNull(properties[ownerColumn] as TSchema) as { type?: unknown }).type === 'integer', declaration,
    `the owner ${String(ownerColumn)} names a user, so it is Type.Integer(), as users' ids are${ownerColumn === 'id' ? ' (a row that is its own owner has an integer key)' : ''}`)
  // The row is its owner's own (`owner: 'id'`): a create makes the owner, it cannot name one.
  const selfOwned = ownerColumn === 'id'
  check(!selfOwned || declaration.ownerOnCreate === undefined, declaration, 'ownerOnCreate needs an owner column other than id: a row that is its own owner is not created as anyone')
  for (const { name: filter, field, op } of filters) {
    check(!LIST_PARAMETERS.includes(filter), declaration, `a filter cannot be named ${filter}: lists take a parameter of that name`)
    const type = (nonNull(properties[field] as TSchema) as { type?: unknown }).type
    if (op === 'positive') check(type === 'integer' || type === 'number', declaration, `filter ${filter}: positive needs a number field, and ${field} is not one`)
    else if (op === 'caseInsensitive') check(type === 'string', declaration, `filter ${filter}: caseInsensitive needs a text field, and ${field} is not one`)
    else if (op === 'isNull') check(acceptsNull(properties[field] as TSchema), declaration, `filter ${filter}: isNull needs a field that may be null, and ${field} is never null`)
    else if (op !== '=') check(type === 'integer' || type === 'number' || type === 'string', declaration, `filter ${filter}: ${op} needs a number, text or date field, and ${field} is none of them`)
  }
  const fieldNames = fields.map(camelCased)
  for (const [relation, declared] of Object.entries(declaration.relations ?? {})) {
    check(!Object.hasOwn(properties, relation) && !fieldNames.includes(relation), declaration, `relation ${relation} must be a name that is not a field`)
    if ('belongsTo' in declared) check(Object.hasOwn(properties, declared.key), declaration, `relation ${relation}: its key ${declared.key} is not in the representation`)
    const { required } = declared as { required?: boolean }
    const under = underOf(declared)
    check(required !== true || !acceptsNull(properties[declared.key] as TSchema), declaration, `relation ${relation}: required needs a key that is never null, and ${declared.key} may be`)
    if (under === 'only' || under === 'one') {
      // The rows always have the row they live under: the relation is `required` already.
      check(required !== false, declaration, `relation ${relation}: under: '${under}' makes it required (the rows always have the row they live under), so required cannot be false`)
      check(!acceptsNull(properties[declared.key] as TSchema), declaration, `relation ${relation}: under: '${under}' needs a key that is never null, and ${declared.key} may be`)
    }
    if (under === 'only') {
      check(!(declaration.writable as readonly string[]).includes(declared.key) && declared.key !== ownerColumn, declaration, `relation ${relation}: under: 'only' sets ${declared.key} from the path, so it is neither writable nor the owner`)
    }
  }
  const unders = Object.entries(declaration.relations ?? {}).filter(([, declared]) => underOf(declared) === 'only')
  check(unders.length <= 1, declaration, `only one relation may be under: 'only': ${unders.map(([relation]) => relation).join(', ')}`)
  check(unders.length === 0 || one === undefined, declaration, `relations ${unders[0]?.[0] ?? ''} and ${one?.[0] ?? ''}: a resource lives under one parent, as 'only' or as 'one'`)
  check(declaration.create === undefined || unders.length === 0, declaration, 'create: its run writes the row, so it cannot be under a parent whose key the path gives')
  checkBehaviour(declaration, Object.keys(declaration.relations ?? {}))
  const hooks = declaration.hooks ?? {}
  const graphqlInputNames = new Set(fieldNames)
  for (const [input, declared] of Object.entries(declaration.inputs ?? {})) {
    check(!Object.hasOwn(properties, input) && !Object.hasOwn(declaration.relations ?? {}, input), declaration, `input ${input} must be a name that is neither a field nor a relation`)
    const graphqlName = declared.graphqlName ?? camelCased(input)
    check(!graphqlInputNames.has(graphqlName), declaration, `input ${input}: its GraphQL name ${graphqlName} must be a name no other field of the inputs has`)
    graphqlInputNames.add(graphqlName)
    if (declared.on.includes('create')) check(hooks.prepareCreate !== undefined || hooks.beforeCreate !== undefined || hooks.afterCreate !== undefined, declaration, `input ${input} is taken by a create with no create hook to use it`)
    if (declared.on.includes('update')) check(hooks.prepareUpdate !== undefined || hooks.beforeUpdate !== undefined || hooks.afterUpdate !== undefined, declaration, `input ${input} is taken by an update with no update hook to use it`)
  }

  const auth: ResourceAuth = {
    read: 'authenticated',
    create: 'authenticated',
    update: owners.length === 0 ? 'admin' : 'ownerOrAdmin',
    delete: owners.length === 0 ? 'admin' : 'ownerOrAdmin',
    // A rule given as undefined is one left out.
    ...Object.fromEntries(Object.entries(declaration.auth ?? {}).filter(([, rule]) => rule !== undefined)),
    // A singular resource's row is made and removed with its parent.
    ...one === undefined ? {} : { create: false, delete: false }
  }
  for (const [action, rule] of Object.entries(auth) as Array<[ResourceAction, AccessRule | false]>) {
    check(rule === false || !rule.startsWith('owner') || owners.length > 0, declaration, `the ${action} rule ${rule} needs an \`owner\` field`)
  }
  check(owners.length === 0 || selfOwned || auth.create !== 'public', declaration, 'create cannot be public when the row has an owner (the caller, or a parent the caller owns)')
  for (const [relation, declared] of Object.entries(declaration.relations ?? {})) {
    if (!('manyToMany' in declared)) continue
    const rule = declared.links ?? auth.update
    check(rule === false || !rule.startsWith('owner') || owners.length > 0, declaration, `relation ${relation}: links: the rule ${String(rule)} needs an \`owner\` field`)
    // A user it links to the row owns the row: whoever may link could make themselves an owner.
    check(!owners.some((path) => path.split('.')[0] === relation) || rule === false || rule === 'admin' || rule.startsWith('owner'), declaration,
      `relation ${relation}: it names owners of the row, so its links rule is 'owner', 'ownerOrAdmin', 'admin' or false (${String(rule)} would let a caller link themselves and own the row)`)
    check(declared.key !== declared.otherKey, declaration, `relation ${relation}: key and otherKey are two columns of ${declared.through}`)
    if ((declared.events ?? []).length === 0) continue
    check(rule !== false, declaration, `relation ${relation}: its events are never announced: its links are not written through the API (links false)`)
    // What an event carries: both rows' keys, this row under the resource's name and the other under the link's.
    const carried = [camelCased(declared.key), camelCased(declared.otherKey), name, singularName(relation)]
    check(new Set(carried).size === carried.length, declaration, `relation ${relation}: an event of its links carries ${carried.join(', ')}, which must be four names`)
  }
  // A create of its own takes its input instead of the writable fields.
  check(declaration.writable.length > 0 || ((auth.create === false || declaration.create !== undefined) && auth.update === false), declaration, 'at least one field must be writable')
  check(declaration.create === undefined || auth.create !== false, declaration, 'create is declared, but its rule is false')
  const bulk: ResourceBulk = { create: declaration.bulk?.create ?? auth.create !== false, update: declaration.bulk?.update ?? false, delete: declaration.bulk?.delete ?? false }
  check(!bulk.create || auth.create !== false, declaration, 'bulk.create: the resource offers no create (auth.create is false)')
  check(bulk.create !== 'inOneStatement' || declaration.create === undefined, declaration, 'bulk.create: inOneStatement is for the rows Tandem inserts; a create of its own writes a batch with create.runMany')
  for (const write of ['update', 'delete'] as const) {
    const rule = bulk[write]
    if (rule === false) continue
    check(auth[write] !== false, declaration, `bulk.${write}: the resource offers no ${write} (auth.${write} is false)`)
    check(!rule.startsWith('owner') || owners.length > 0, declaration, `bulk.${write}: the rule ${rule} needs an \`owner\` field`)
    check(filters.length > 0, declaration, `bulk.${write}: a ${write} by filter needs the resource to declare filters`)
    check(one === undefined && unders.length === 0, declaration, `bulk.${write}: the rows of a resource that lives under a parent (under: 'only' or 'one') are not listed at /{plural}`)
  }
  // The hook is given the row's id before its transaction opens; a change by filter finds its rows inside it.
  check(bulk.update === false || hooks.prepareUpdate === undefined, declaration, 'bulk.update: prepareUpdate runs with a row\'s id before its transaction opens, and a change by filter finds its rows inside it')
  // An event of a write that is not served would never be announced; actions announce `updated` too.
  const announcedBy: Record<ResourceEvent, boolean> = {
    created: auth.create !== false,
    updated: auth.update !== false || Object.keys(declaration.actions ?? {}).length > 0,
    deleted: auth.delete !== false
  }
  const events = eventsOf(declaration)
  for (const { event, subscription, require } of events) {
    check(announcedBy[event], declaration, `the event ${event} is never announced: its write is not served (auth false)`)
    check(events.filter((other) => other.subscription === subscription).length === 1, declaration, `two events are the subscription ${subscription}`)
    known(require, `event ${event}: require`)
  }
  const fieldRules = fieldRulesOf(declaration, key, events, owners)
  const [under] = unders
  const underTarget = under === undefined ? undefined : (under[1] as { belongsTo: string }).belongsTo
  const listedUnder = Object.entries(declaration.relations ?? {}).flatMap(([relation, declared]): ListedUnder[] => {
    const under = underOf(declared)
    if (!('belongsTo' in declared) || (under !== 'also' && under !== 'only')) return []
    const named = filters.find(({ field, op }) => field === declared.key && op === '=')?.name
    const filter = named ?? (under === 'only' ? '$parent' : `$parent:${declared.key}`)
    return [Object.freeze({ relation, key: declared.key, target: declared.belongsTo, filter })]
  })
  for (const listed of listedUnder) {
    check(listedUnder.filter(({ target }) => target === listed.target).length === 1, declaration, `relation ${listed.relation}: two relations are listed under ${listed.target}, whose path would be /{id}/${plural} twice`)
  }

  const pick = (fields: readonly string[]): TProperties => Object.fromEntries(fields.map((field) => [field, withoutDefault(properties[field] as TSchema)]))
  const writable = pick(declaration.writable)
  const optionalIf = (leftOut: (schema: TSchema) => boolean) => (schema: TSchema) => leftOut(schema) ? Type.Optional(schema) : schema
  // A create's fields with their defaults, which the body's validation fills in.
  const createProperties = Object.fromEntries(declaration.writable.map((field) => [field, optionalIf((schema) => acceptsNull(schema) || 'default' in schema)(properties[field] as TSchema)]))
  // A create that may name its owner takes it last, and may leave it out (the caller).
  if (declaration.ownerOnCreate !== undefined) createProperties[ownerColumn as string] = Type.Optional(withoutDefault(properties[ownerColumn as string] as TSchema))
  const replaceProperties = Object.fromEntries(Object.entries(writable).map(([field, schema]) => [field, optionalIf(acceptsNull)(schema)]))
  // Write-only inputs after the columns, as their schemas say (`Type.Optional`: may be left out), and
  // marked `writeOnly`: OpenAPI says so, and an Idempotency-Key's fingerprint leaves them out.
  for (const [input, { schema, on }] of Object.entries(declaration.inputs ?? {})) {
    const writeOnly = { ...schema, writeOnly: true } as TSchema
    if (on.includes('create')) createProperties[input] = writeOnly
    if (on.includes('update')) replaceProperties[input] = writeOnly
  }
  const patchProperties = Object.fromEntries(Object.entries(replaceProperties).map(([field, schema]) => [field, KindGuard.IsOptional(schema) ? schema : Type.Optional(schema)]))
  // What reads answer: a field with a read rule is null for callers it does not admit.
  const answered = (fields: readonly string[]): TProperties => Object.fromEntries(Object.entries(pick(fields)).map(([field, schema]) =>
    [field, fieldRules?.fields[field] === undefined || acceptsNull(schema) ? schema : Type.Union([schema, Type.Null()])]))
  const rest = answered(fields.filter((field) => field !== key))
  // `fields=` never leaves out the key: a row is always named.
  const selection = key === 'id' && keyType === 'integer' ? Selectable(rest) : Type.Composite([Type.Object({ [key]: properties[key] as TSchema }), Type.Partial(Type.Object(rest))])
  const filterDescriptions = Array.isArray(declaration.filters) ? {} : declaration.filters as Readonly<Record<string, FilterDeclaration>> | undefined ?? {}
  const filterParameters = Object.fromEntries(filters.map((filter) => [filter.name, Type.Optional(filterSchema(filter, properties[filter.field] as TSchema, filterDescriptions[filter.name]?.description))]))
  const sort = [...new Set([key, ...(declaration.sort ?? [])])]

  return Object.freeze({
    declaration: Object.freeze({ ...declaration }) as ResourceDeclaration,
    representation,
    name,
    plural,
    table,
    key,
    keyType,
    columns,
    loaded,
    auth: Object.freeze(auth),
    filters: Object.freeze(filters.map((filter) => Object.freeze(filter))),
    events: Object.freeze(events.map((event) => Object.freeze(event))),
    bulk: Object.freeze(bulk),
    ...under === undefined ? {} : { under: Object.freeze({ relation: under[0], key: under[1].key, target: underTarget as string }) },
    listedUnder: Object.freeze(listedUnder),
    ...fieldRules === undefined ? {} : { fieldRules },
    ...ownerColumn === undefined ? {} : { owner: ownerColumn },
    owners: Object.freeze(owners),
    writable: Object.freeze([...declaration.writable]),
    search: Object.freeze([...declaration.search ?? []]),
    inputs: Object.freeze({ ...declaration.inputs }),
    // Each `load` is called with keys of the representation's key type (`keyOfType`), the one it was declared with.
    loaders: Object.freeze({ ...declaration.loaded }) as unknown as Readonly<Record<string, LoadedField>>,
    relations: Object.freeze({ ...declaration.relations }),
    ...declaration.create === undefined ? {} : { create: declaration.create as unknown as CreateDeclaration },
    ...declaration.ownerOnCreate === undefined ? {} : { ownerOnCreate: declaration.ownerOnCreate },
    ...declaration.createLimit === undefined ? {} : { createLimit: declaration.createLimit },
    hooks: Object.freeze({ ...declaration.hooks }) as Readonly<ResourceHooks>,
    actions: Object.freeze({ ...declaration.actions }) as Readonly<Record<string, ActionDeclaration>>,
    othersRows: declaration.othersRows ?? 'hidden',
    emptyPatch: declaration.emptyPatch ?? 'unchanged',
    ...one === undefined ? {} : { singularOf: one[1].belongsTo },
    schemas: {
      item: Type.Object(answered(fields), { additionalProperties: false }),
      selection,
      list: ListOf(selection),
      listQuery: ListQuery(sort, filterParameters),
      // A create of its own takes its input, closed like every body unless the host opened it.
      create: declaration.create === undefined
        ? Type.Object(createProperties, { additionalProperties: false })
        : { ...declaration.create.input, additionalProperties: declaration.create.input.additionalProperties ?? false } as TObject,
      replace: Type.Object(replaceProperties, { additionalProperties: false }),
      patch: Type.Object(patchProperties, { additionalProperties: false, ...declaration.emptyPatch === 'refused' ? { minProperties: 1 } : {} })
    }
  })
}
