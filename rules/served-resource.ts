// A served resource as one object: every rule of a declared resource in one place, below both
// transports. REST routes, GraphQL resolvers and a host's own code only translate their requests
// into its calls and its answers into theirs; none of them applies a rule of its own.
import type { FastifyInstance } from 'fastify'
import type { Static, TObject } from '@sinclair/typebox'
import type { TSchema } from '@sinclair/typebox'
import { cursorsOf, type ListPage, type ListParams, type Row } from '../db/pagination.js'
import { linkFilter, notNullFilter, OWNER_FILTER, resourceData, rowExists, type ResourceData } from '../db/resource.js'
import { reading } from '../db/replicas.js'
import type { AccessUser } from '../plugins/auth.js'
import { badRequest, forbidden, notFound, unauthenticated, unprocessable } from '../schema/errors.js'
import { servedRelations, type RelationTarget } from '../schema/relation-targets.js'
import { nonNull, type AccessRule, type Resource } from '../schema/resource.js'
import type { Db } from '../db/connect.js'
import type { JsonObject, Listing } from '../db/relations.js'
import { mayMatchField, narrowFilters, shownRow, shownRows, withOwnerColumn } from './field-rules.js'
import { announce, callerNeeded, forbidsOthersRows, mayRead, readableOwner, readRefused, replacedValues } from './resource.js'
import { ownerRuleOf, resolveOwners } from '../schema/owners.js'
import { ownedInRow } from '../db/owners.js'
import { checkInput } from './checked-input.js'
import { keyTypeOf, parseKey, type Key, type KeyType } from '../schema/keys.js'
import { itemError, resourceWrites, type WriteDb } from './resource-writes.js'
import { linkWrites, type LinkEventPayload, type LinkOptions, type LinkResult, type LinkWanted } from './links.js'

export type { LinkEventPayload, LinkOptions, LinkResult, LinkWanted } from './links.js'

/**
 * Who asks: the signed-in user (`request.user`, a GraphQL context's viewer), or undefined for
 * nobody. Every call applies the resource's rules to it; a caller the rule does not admit is refused
 * (401 without a user, 403 for a user the rule leaves out).
 */
export type Caller = AccessUser | undefined

/** A list request: the list parameters of CONTRACT §3, and the declared filters (and `q`) by name. */
export type ListRequest = ListParams & Readonly<Record<string, unknown>>

/** Where a read may go (a replica or the primary: db/replicas.ts). */
export interface RoutingOptions {
  /**
   * The signed-in user whose writes the read must see when the rules see no caller: a public
   * resource's route reads as nobody, but an administrator re-reading the product they have just
   * changed sent their token. Default: the caller.
   */
  readsAs?: number | undefined
}

export interface ListOptions extends RoutingOptions {
  /**
   * The rows that belong to one row of a relation's target: `{ relation: 'author', id: 3 }` lists the
   * posts of user 3 (a `belongsTo` declared `listed` or `under`: `GET /users/3/posts`), with the cursors
   * of the declared equality filter on its key when there is one. 404 naming the target when there is
   * no such row; when the key is the owner column and the caller's read rule shows them their own rows
   * only, another owner's rows are refused (403).
   */
  under?: { relation: string, id: Key } | undefined
  /** The parent's id, for a resource that lives under one (`under`): `under` with that relation. */
  parent?: Key | undefined
  /**
   * The rows one row's list relation leads to: `{ resource: 'user', relation: 'watchedTasks', id: 3 }`
   * lists the tasks user 3 watches (a hasMany or manyToMany of that resource, its own or an `inverse`
   * declared here: `GET /users/3/watchedTasks`), with the cursors of the declared equality filter on a
   * hasMany's key when there is one. Whether that row is there for the caller is its own resource's
   * read rule: ask it first (`readable`).
   */
  of?: { resource: string, relation: string, id: Key } | undefined
  /**
   * The rows of one owner only: 404 naming the owner's resource when there is none. A caller whose read
   * rule narrows them to their own rows asks another's: 403.
   */
  owner?: number | undefined
  /** Give each row its cursor (`cursors`, in the rows' order): what continues the list after it, in its order and under its filters. */
  cursors?: boolean | undefined
}

/** A page of rows as the caller may see them; `cursors` when asked (`ListOptions.cursors`). */
export type ResourcePage<R> = ListPage<R> & { cursors?: string[] }

export interface ReadOptions extends RoutingOptions {
  /** `fields=`: the fields to read, comma-separated (the key always is). Default: every field. */
  fields?: string | undefined
}

export interface WriteOptions {
  /**
   * The database the write is made with: `app.db` by default, a transaction the caller commits, or a
   * function that opens one (REST's `request.writeDb`), which the write calls once its prepare hook has run.
   */
  db?: WriteDb | undefined
  /**
   * How to run what waits for the commit (events, hooks' `afterCommit`) when `db` is a transaction the
   * caller commits later. Without it, the write has committed when the call returns.
   */
  afterCommit?: ((fn: () => void) => void) | undefined
  /**
   * A precondition on the current row, as the caller may see it (REST's `If-Match`): run on the locked
   * row once the rules allow the change; what it throws refuses the change.
   */
  check?: ((current: Row) => void) | undefined
}

export interface CreateOptions extends Omit<WriteOptions, 'check'> {
  /** The parent's id, for a resource that lives under one (`under`): 404 naming the parent when there is none. */
  parent?: Key | undefined
}

/** What a bulk write may be given: the database, and how to run what waits for the commit (see `WriteOptions`). */
export type BulkOptions = Omit<WriteOptions, 'check'>

/** What a change or a deletion by filter did: how many rows, and their keys (in key order). */
export interface BulkResult {
  count: number
  ids: Key[]
}

/**
 * A served resource: its reads and writes, each taking the caller and applying every rule of the
 * declaration — the access rules, read narrowing to the caller's own rows, another owner's row as no
 * such row (403 with `othersRows: 'forbidden'`), the owner check on the locked row, field read rules,
 * hooks and actions, events after the commit, pages and cursors.
 */
export interface ServedResource<R extends object = Row> {
  readonly resource: Resource
  /** A page of the rows `caller` may read, as `query` asks (CONTRACT §3 and the declared filters). */
  list: (caller: Caller, query?: ListRequest, options?: ListOptions) => Promise<ResourcePage<R>>
  /** Rows from `offset` on, without a cursor or a count (GraphQL's plain list). */
  rows: (caller: Caller, query?: ListRequest, options?: RoutingOptions) => Promise<R[]>
  /**
   * The rows `rows` answers, as the JSON array's text of `object` (its columns, constants and the
   * relations below, each narrowed as the caller gives it), from one statement; undefined when
   * `object` shows a field with a read rule, which only `rows` applies.
   */
  rowsAsJson: (caller: Caller, query: Pick<ListRequest, 'limit' | 'offset'>, object: JsonObject, options?: RoutingOptions) => Promise<string | undefined>
  /**
   * The filters and sort of `query` for a list of these rows nested below other rows (GraphQL's
   * `Project.tasks(status: todo, orderBy: [DUE_ON_DESC])`), checked and narrowed for `caller` as `list`
   * narrows them: what the relation statements add to their link (their read rule is theirs to apply).
   */
  listing: (caller: Caller, query: ListRequest) => Listing
  /** The row whose key is `id` as `caller` may see it; undefined when there is none, or it is hidden from them. */
  get: (caller: Caller, id: Key, options?: ReadOptions) => Promise<R | undefined>
  /** Whether `caller` may read the row whose key is `id` (it is there, and not hidden from them). */
  readable: (caller: Caller, id: Key, options?: RoutingOptions) => Promise<boolean>
  /** Creates a row from `body`, the owner set to the caller: the row as written, whole (its caller wrote it). */
  create: (caller: Caller, body: Readonly<Record<string, unknown>>, options?: CreateOptions) => Promise<R>
  /**
   * Creates a row from each of `bodies` (1 to `bulkMaxItems`, else 400) in one transaction, each under
   * the rules, hooks, defaults and owner of `create`: the rows in the order given, whole. The first item
   * refused decides the error, its `field` naming the item (`[3].name`), and nothing is written.
   * `created` is announced per row after the commit. A declaration with `bulk: { create: false }` refuses (400).
   */
  createMany: (caller: Caller, bodies: ReadonlyArray<Readonly<Record<string, unknown>>>, options?: CreateOptions) => Promise<R[]>
  /**
   * Changes the fields `values` gives of every row the declared `filters` find (at least one, else
   * 400) among those `caller` may change (owner rules narrow to their rows), in one transaction, each
   * under the rules and hooks of `update`: more than `bulkMaxItems` rows found is a 422, nothing
   * changed. Only where the declaration's `bulk.update` offers it (403 otherwise).
   */
  updateWhere: (caller: Caller, filters: Readonly<Record<string, unknown>>, values: Readonly<Record<string, unknown>>, options?: BulkOptions) => Promise<BulkResult>
  /** Deletes every row the declared `filters` find, as `updateWhere` changes them (`bulk.delete`, the rules and hooks of `remove`). */
  removeWhere: (caller: Caller, filters: Readonly<Record<string, unknown>>, options?: BulkOptions) => Promise<BulkResult>
  /** Changes the fields `values` gives (PATCH): the row as `caller` may see it, or undefined when there is none for them. */
  update: (caller: Caller, id: Key, values: Readonly<Record<string, unknown>>, options?: WriteOptions) => Promise<R | undefined>
  /** Replaces every writable field (PUT: those left out are null). */
  replace: (caller: Caller, id: Key, body: Readonly<Record<string, unknown>>, options?: WriteOptions) => Promise<R | undefined>
  /** Deletes the row: the row as it was, or undefined when there was none for them. */
  remove: (caller: Caller, id: Key, options?: WriteOptions) => Promise<R | undefined>
  /** Runs the declared action `name`: the row as the action leaves it, or undefined when there is none for them. */
  act: (caller: Caller, name: string, id: Key, input?: Readonly<Record<string, unknown>>, options?: WriteOptions) => Promise<R | undefined>
  /**
   * What a subscriber `caller` hears of the events (refused as a read is when the read rule does not
   * admit them): whether an event's row, as its write left it, is one they may read and whose fields
   * have the values `wanted`, a filter on a hidden field matched only on rows whose field they read
   * (else the events would tell its value).
   */
  hearing: (caller: Caller, wanted: ReadonlyArray<readonly [string, unknown]>) => (row: Readonly<Record<string, unknown>>) => boolean
  /**
   * Links the row `id` to the row `otherId` of its manyToMany relation `relation` (a row of its join
   * table), under the relation's `links` rule: the row locked, one `caller` may read (else 404 naming the
   * resource) and, under an owner rule, their own (403); the other row one they may read (else 404
   * naming its resource). Idempotent: `changed` is false when the link was there already. `linked` is
   * announced after the commit, when the relation declares it.
   */
  link: (caller: Caller, relation: string, id: Key, otherId: Key, options?: LinkOptions) => Promise<LinkResult<R>>
  /** Removes that link, under the same rules: 404 when there is none. `unlinked` is announced after the commit. */
  unlink: (caller: Caller, relation: string, id: Key, otherId: Key, options?: LinkOptions) => Promise<LinkResult<R>>
  /** What a subscriber `caller` hears of the link events of `relation` (refused as a read is): both rows ones they may read, with the ids `wanted`. */
  hearingLinks: (caller: Caller, relation: string, wanted: LinkWanted) => (payload: LinkEventPayload) => boolean
}

/** The rows one list is of: those whose key the filter `filter` gives `id`, which names a row of `target`. */
interface Restriction {
  filter: string
  id: Key
  target: RelationTarget | undefined
  /** Whether the key is the owner column: a caller narrowed to their own rows asks for another's. */
  ofOwner: boolean
}

/** Whether an event's value is the one a subscriber asked for (ids and numbers compared as numbers: events may come through JSON). */
function sameValue (actual: unknown, wanted: unknown): boolean {
  return typeof wanted === 'number' ? Number(actual) === wanted : actual === wanted
}

/** The served resource of a declaration, its row typed from the representation. */
export type ServedResourceOf<T> = T extends Resource<infer S extends TObject> ? ServedResource<Static<S> & object> : never

/**
 * A key from a host's code as a transport's schema would have it, of the key type of the rows it names
 * (a positive safe integer, a bigint's text, a UUID, text), else the 400 naming it: never a database
 * error (PostgreSQL refuses a malformed uuid with 22P02). An integer key is taken as a number only, as
 * it always was.
 */
function checkedKey (type: KeyType, id: unknown, field = 'id'): Key {
  if (type === 'integer' && typeof id !== 'number') throw badRequest(`${field} must be a positive integer id`, field)
  return parseKey(type, id, field)
}

/** Refuses `caller` unless `rule` admits them before the row is looked at: 401 without a user, 403 for a non-admin under `admin`. */
export function admitted (rule: AccessRule | false | undefined, caller: Caller, what: string): void {
  // A write the declaration does not offer is refused to everyone, whoever calls.
  if (rule === false || rule === undefined) throw forbidden(`a ${what} is not offered`)
  const needed = callerNeeded(rule)
  if (needed === 'nobody') return
  if (caller === undefined) throw unauthenticated()
  if (needed === 'admin' && caller.role !== 'admin') throw forbidden('only an administrator may do this')
}

/**
 * Builds the served resource of `resource` on `app` (its database, configuration and event bus).
 * `resources` are every resource served beside it, where its relations' targets (and parent) are found.
 */
export function serveResource (app: FastifyInstance, resource: Resource, resources: readonly Resource[] = [resource]): ServedResource {
  // Who owns the rows of every resource served beside it (through their relations' targets), checked once at start.
  resolveOwners(resources)
  // The list relations of other rows that lead to these rows (a user's `watchedTasks`), by `resource.relation`:
  // the filter naming one such row's, the declared equality filter on a hasMany's key when there is one.
  // That row is named by its own resource's key type (a uuid project's tasks: a uuid).
  const linked = resources.flatMap((other) => servedRelations(other, resources)
    .filter((relation) => relation.list && relation.target.resource === resource)
    .map((relation) => ({ of: `${other.name}.${relation.name}`, relation, keyType: other.keyType })))
  const linkFilters = new Map(linked.map(({ of, relation, keyType }) => [of, {
    filter: resource.filters.find(({ field, op }) => relation.kind !== 'manyToMany' && field === relation.key && op === '=')?.name ?? linkFilter(relation),
    keyType
  }]))
  const data: ResourceData = resourceData(resource, linked.map(({ relation }) => relation))
  const writes = resourceWrites(resource, data, resources)
  const links = linkWrites(app, resource, data, resources, (caller, row) => shownRow(resource.fieldRules, caller, row))
  const { auth, key, name, plural, keyType } = resource
  const checkedId = (id: unknown, field = 'id'): Key => checkedKey(keyType, id, field)
  const rules = resource.fieldRules
  const search = resource.search ?? []
  const filterNames = [...resource.filters.map(({ name }) => name), ...search.length > 0 ? ['q'] : []]
  // A uuid's case is no part of it: one filter in either case (REST's as sent, GraphQL's as parsed) is
  // one list, whose cursors the other style continues.
  const uuidFilters = new Set(resource.filters
    .filter(({ field }) => keyTypeOf(nonNull(resource.representation.properties[field] as TSchema)) === 'uuid')
    .map(({ name }) => name))
  // An action's input is closed like every body of the API unless the host opened it; none at all without `input`.
  const actionInputs = new Map(Object.entries(resource.actions ?? {}).map(([action, { input }]) =>
    [action, (input === undefined ? { type: 'object', maxProperties: 0 } : { ...input, additionalProperties: input.additionalProperties ?? false }) as TSchema]))
  // The owner's resource (its `belongsTo` by the owner column), and the filter that names one owner's
  // rows: the declared equality filter on the owner column, whose cursors a page of one owner then
  // shares, when that column is the only owner (else every row the user owns, by any path).
  const ownerColumn = resource.owners.length === 1 ? resource.owner : undefined
  const relations = servedRelations(resource, resources)
  const ownerTarget = relations.find(({ kind, key }) => kind === 'belongsTo' && key === ownerColumn)?.target
  const ownerFilter = (ownerColumn === undefined ? undefined : resource.filters.find(({ field, op }) => field === ownerColumn && op === '=')?.name) ?? OWNER_FILTER
  // Whether an event's row tells who owns it (an owner rule of its columns alone).
  const ownedInEvent = ownedInRow(ownerRuleOf(resource))
  // Each relation the rows are listed under: the filter naming one target's rows, the target (for the 404).
  const listedUnder = new Map(resource.listedUnder.map((listed) => [listed.relation, { ...listed, target: relations.find(({ name }) => name === listed.relation)?.target }]))
  // The key type of the row the resource lives under (`under`), which a create names.
  const parentKeyType = (resource.under === undefined ? undefined : listedUnder.get(resource.under.relation)?.target?.resource?.keyType) ?? 'integer'

  /** The rows one list is of (`ListOptions`): the filter that names them, the row's id, its table and name for the 404. */
  const restrictionOf = (options: ListOptions): Restriction | undefined => {
    const { under, parent, owner, of } = options
    if (of !== undefined) {
      const link = linkFilters.get(`${of.resource}.${of.relation}`)
      if (link === undefined) throw new Error(`${plural} are not the ${of.relation} of a ${of.resource}`)
      return { filter: link.filter, id: checkedKey(link.keyType, of.id), target: undefined, ofOwner: false }
    }
    const relation = under?.relation ?? (parent === undefined ? undefined : resource.under?.relation)
    if (relation !== undefined) {
      const listed = listedUnder.get(relation)
      if (listed === undefined) throw new Error(`${name} is not listed under ${relation}`)
      // The row they are listed under is named by its own key's type (a built-in's: an integer).
      const id = checkedKey(listed.target?.resource?.keyType ?? 'integer', under?.id ?? parent, under === undefined ? 'parent' : 'id')
      return { filter: listed.filter, id, target: listed.target, ofOwner: listed.key === ownerColumn }
    }
    if (owner === undefined) return undefined
    if (resource.owners.length === 0) throw new Error(`${name} has no owner to list the rows of`)
    return { filter: ownerFilter, id: checkedKey('integer', owner, 'owner'), target: ownerTarget, ofOwner: true }
  }

  /** The filters of a list `caller` asks: the declared ones given, narrowed by the read rule and the field rules. */
  const filtersOf = (caller: Caller, query: ListRequest, restriction?: Restriction): Record<string, unknown> => {
    const filters: Record<string, unknown> = {}
    for (const filter of filterNames) {
      const value = query[filter]
      if (value !== undefined) filters[filter] = uuidFilters.has(filter) && typeof value === 'string' ? value.toLowerCase() : value
    }
    const owner = readableOwner(resource, caller)
    if (owner !== undefined) filters[OWNER_FILTER] = owner
    if (restriction !== undefined) {
      if (restriction.ofOwner && owner !== undefined && owner !== restriction.id) throw readRefused(resource)
      filters[restriction.filter] = restriction.id
    }
    narrowFilters(rules, caller, filters, resource.filters, search)
    // `is not null` is a statement of its own (db/resource.ts); cursors are bound to it as to any filter.
    for (const { name, op } of resource.filters) {
      if (op === 'isNull' && filters[name] === false) {
        delete filters[name]
        filters[notNullFilter(name)] = true
      }
    }
    return filters
  }

  const bulkMax = (): number => app.tandemConfig.bulkMaxItems
  const declaredFilters = resource.filters.map(({ name }) => name)
  // Whether `rule` admits `caller` to their own rows only.
  const ownRowsOnly = (rule: AccessRule | false, caller: Caller): boolean => rule === 'owner' || (rule === 'ownerOrAdmin' && caller?.role !== 'admin')
  /**
   * The filters of a change by filter: the declared ones given (at least one), narrowed as a list of
   * the caller's is, and to the caller's own rows where the rule of the change or of the bulk write says so.
   */
  const whereOf = (caller: Caller, given: Readonly<Record<string, unknown>>, rules: ReadonlyArray<AccessRule | false>): Record<string, unknown> => {
    for (const name of Object.keys(given)) if (!declaredFilters.includes(name) && given[name] !== undefined) throw badRequest(`${name} is not a filter of ${plural}; filters: ${declaredFilters.join(', ')}`, name)
    const named = Object.fromEntries(declaredFilters.filter((name) => given[name] !== undefined && given[name] !== null).map((name) => [name, given[name]]))
    if (Object.keys(named).length === 0) throw badRequest(`a change of ${plural} by filter needs at least one filter: ${declaredFilters.join(', ')}`)
    const filters = filtersOf(caller, checkInput<Record<string, unknown>>(resource.schemas.listQuery, named), undefined)
    if (rules.some((rule) => ownRowsOnly(rule, caller))) filters[OWNER_FILTER] = caller?.sub ?? 0
    return filters
  }
  /** Locks the rows `filters` find, refusing more than `bulkMaxItems` of them before anything changes. */
  const lockingWhere = (filters: Record<string, unknown>) => async (trx: Db): Promise<Key[]> => {
    const max = bulkMax()
    const ids = await data.lockWhere(trx, filters, max + 1)
    if (ids.length > max) throw unprocessable(`more than ${max} ${plural} match these filters: narrow them (at most ${max} rows are changed at once)`)
    return ids
  }
  const bulkResult = (rows: readonly Row[]): BulkResult => ({ count: rows.length, ids: rows.map((row) => row[key] as Key) })

  /** Runs `fn` once the write has committed: at once, or when the caller's transaction commits. */
  const afterCommitOf = (options: WriteOptions | CreateOptions) => (fn: () => void): void => {
    if (options.afterCommit === undefined) fn()
    else options.afterCommit(fn)
  }
  const environment = (options: WriteOptions | CreateOptions) => ({ app, afterCommit: options.afterCommit })
  // The transport's precondition sees the row as its caller was shown it.
  const shownCheck = (caller: Caller, check: WriteOptions['check']) => check === undefined ? undefined : (current: Row) => { check(shownRow(rules, caller, current)) }

  const served: ServedResource = {
    resource,
    async list (caller, query = {}, options = {}) {
      admitted(auth.read, caller, `read of ${name}`)
      const restriction = restrictionOf(options)
      const filters = filtersOf(caller, query, restriction)
      // Each row's cursor needs its sort column, which `fields=` may leave out: read, then dropped again.
      const sorted = String(query.sort ?? 'id').replace(/^-/, '')
      const read = withOwnerColumn(rules, options.cursors === true && query.fields !== undefined ? `${query.fields},${sorted}` : query.fields, key)
      const context = { secret: app.tandemConfig.jwtSecret, filters }
      const target = restriction?.target
      // A row they belong to that its read rule hides from the caller is no row to them: nor are its rows.
      const targetOwner = target?.resource === undefined ? undefined : readableOwner(target.resource, caller)
      const page = await reading(app.db, caller?.sub ?? options.readsAs, async (db) => {
        if (target?.resource !== undefined && targetOwner !== undefined && restriction !== undefined &&
          !await rowExists(db, target.table, restriction.id, { owners: ownerRuleOf(target.resource), id: targetOwner })) throw notFound(target.name)
        const page = await data.page(db, { ...query, fields: read.fields }, context)
        // Else only an empty page needs to ask whether the row they belong to exists at all.
        if (page.data.length === 0 && target !== undefined && targetOwner === undefined && restriction !== undefined && !await rowExists(db, target.table, restriction.id)) throw notFound(target.name)
        return page
      })
      const cursors = options.cursors === true ? cursorsOf(data.list, query, context, page.data) : undefined
      const rows = shownRows(rules, caller, page.data)
      read.strip(rows)
      if (cursors !== undefined && query.fields !== undefined && !query.fields.split(',').some((field) => field.trim() === sorted)) for (const row of rows) delete row[sorted]
      const shown: ResourcePage<Row> = { ...page, data: rows }
      if (cursors !== undefined) shown.cursors = cursors
      return shown
    },
    async rows (caller, query = {}, options = {}) {
      admitted(auth.read, caller, `read of ${name}`)
      const read = withOwnerColumn(rules, query.fields, key)
      const filters = filtersOf(caller, query)
      const rows = await reading(app.db, caller?.sub ?? options.readsAs, (db) => data.rows(db, { limit: query.limit, offset: query.offset, sort: query.sort, order: query.order, fields: read.fields }, filters))
      const shown = shownRows(rules, caller, rows)
      read.strip(shown)
      return shown
    },
    async rowsAsJson (caller, query, object, options = {}) {
      admitted(auth.read, caller, `read of ${name}`)
      if (rules !== undefined && object.columns.some(([, column]) => rules.fields[column] !== undefined)) return undefined
      const filters = filtersOf(caller, {})
      return await reading(app.db, caller?.sub ?? options.readsAs, async (db) => await data.rowsAsJson(db, { limit: query.limit, offset: query.offset }, filters, object))
    },
    listing (caller, query) {
      return data.listing(app.db, query, filtersOf(caller, query))
    },
    async get (caller, id, options = {}) {
      admitted(auth.read, caller, `read of ${name}`)
      id = checkedId(id)
      const owner = readableOwner(resource, caller)
      const read = withOwnerColumn(rules, options.fields, key)
      const row = await reading(app.db, caller?.sub ?? options.readsAs, async (db) => {
        const row = await data.find(db, id, read.fields, owner)
        // Only a miss under an owner rule that forbids others' rows asks whether the row is someone else's.
        if (row === undefined && owner !== undefined && forbidsOthersRows(resource) && await data.find(db, id, key) !== undefined) throw readRefused(resource)
        return row
      })
      if (row === undefined) return undefined
      const shown = shownRow(rules, caller, row)
      read.strip([shown])
      return shown
    },
    async readable (caller, id, options = {}) {
      admitted(auth.read, caller, `read of ${name}`)
      const owner = readableOwner(resource, caller)
      id = checkedId(id)
      return await reading(app.db, caller?.sub ?? options.readsAs, (db) => data.find(db, id, key, owner)) !== undefined
    },
    async create (caller, body, options = {}) {
      admitted(auth.create, caller, `create of ${name}`)
      // Whoever calls, a body is the declaration's: checked here too, never written as it came.
      const parent = options.parent === undefined ? undefined : checkedKey(parentKeyType, options.parent, 'parent')
      const row = await writes.create(options.db ?? app.db, caller, checkInput(resource.schemas.create, body), environment(options), parent)
      afterCommitOf(options)(() => { announce(app, resource, 'created', row) })
      return row
    },
    async createMany (caller, bodies, options = {}) {
      admitted(auth.create, caller, `create of ${name}`)
      if (!resource.bulk.create) throw badRequest(`${plural} are created one at a time: send one object`)
      const max = bulkMax()
      if (!Array.isArray(bodies) || bodies.length === 0 || bodies.length > max) throw badRequest(`a batch takes 1 to ${max} items`)
      const parent = options.parent === undefined ? undefined : checkedKey(parentKeyType, options.parent, 'parent')
      // Every body is checked before anything is written: the first refused decides.
      const checked = bodies.map((body, index) => {
        try {
          if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('must be an object')
          return checkInput<Record<string, unknown>>(resource.schemas.create, body)
        } catch (error) {
          throw itemError(index, error)
        }
      })
      const rows = await writes.createMany(options.db ?? app.db, caller, checked, environment(options), parent)
      afterCommitOf(options)(() => { for (const row of rows) announce(app, resource, 'created', row) })
      return rows
    },
    async updateWhere (caller, filters, values, options = {}) {
      admitted(resource.bulk.update, caller, `change by filter of ${plural}`)
      admitted(auth.update, caller, `change of ${name}`)
      const where = whereOf(caller, filters, [resource.bulk.update, auth.update])
      const rows = await writes.updateMany(options.db ?? app.db, caller, lockingWhere(where), checkInput(resource.schemas.patch, values), environment(options))
      afterCommitOf(options)(() => { for (const row of rows) announce(app, resource, 'updated', row) })
      return bulkResult(rows)
    },
    async removeWhere (caller, filters, options = {}) {
      admitted(resource.bulk.delete, caller, `deletion by filter of ${plural}`)
      admitted(auth.delete, caller, `deletion of ${name}`)
      const where = whereOf(caller, filters, [resource.bulk.delete, auth.delete])
      const db = options.db ?? app.db
      const rows = await writes.removeMany(typeof db === 'function' ? await db() : db, caller, lockingWhere(where), environment(options))
      afterCommitOf(options)(() => { for (const row of rows) announce(app, resource, 'deleted', row) })
      return bulkResult(rows)
    },
    async update (caller, id, values, options = {}) {
      admitted(auth.update, caller, `change of ${name}`)
      const row = await writes.update(options.db ?? app.db, checkedId(id), caller, checkInput(resource.schemas.patch, values), shownCheck(caller, options.check), environment(options))
      if (row === undefined) return undefined
      afterCommitOf(options)(() => { announce(app, resource, 'updated', row) })
      return shownRow(rules, caller, row)
    },
    async replace (caller, id, body, options = {}) {
      admitted(auth.update, caller, `change of ${name}`)
      return served.update(caller, id, replacedValues(resource, checkInput(resource.schemas.replace, body)), options)
    },
    async remove (caller, id, options = {}) {
      admitted(auth.delete, caller, `deletion of ${name}`)
      const db = options.db ?? app.db
      const row = await writes.remove(typeof db === 'function' ? await db() : db, checkedId(id), caller, shownCheck(caller, options.check), environment(options))
      if (row === undefined) return undefined
      afterCommitOf(options)(() => { announce(app, resource, 'deleted', row) })
      return row
    },
    hearing (caller, wanted) {
      admitted(auth.read, caller, `read of ${name}`)
      // An event's row cannot tell who owns it through a relation: a subscriber narrowed to their own
      // rows would need a statement per event, so the subscription is refused (administrators under ownerOrAdmin hear every row).
      if (!ownedInEvent && readableOwner(resource, caller) !== undefined) throw forbidden(`the events of ${plural} are heard by subscribers who read every ${name} only: its owner is found through a relation`)
      return (row) => mayRead(resource, caller, row) === true && wanted.every(([field, value]) => mayMatchField(rules, caller, row, field) && sameValue(row[field], value))
    },
    async link (caller, relation, id, otherId, options = {}) {
      return links.link(caller, relation, checkedId(id), checkedKey(links.otherKeyType(relation), otherId, 'otherId'), options)
    },
    async unlink (caller, relation, id, otherId, options = {}) {
      return links.unlink(caller, relation, checkedId(id), checkedKey(links.otherKeyType(relation), otherId, 'otherId'), options)
    },
    hearingLinks (caller, relation, wanted) {
      admitted(auth.read, caller, `read of ${name}`)
      return links.hearing(caller, relation, wanted)
    },
    async act (caller, action, id, input = {}, options = {}) {
      const declared = resource.actions?.[action]
      if (declared === undefined) throw notFound(`action ${action} of ${name}`)
      admitted(declared.auth, caller, `${action} of ${name}`)
      const db = options.db ?? app.db
      const checked = checkInput<Record<string, unknown>>(actionInputs.get(action) as TSchema, input)
      const row = await writes.act(typeof db === 'function' ? await db() : db, action, checkedId(id), caller, checked, shownCheck(caller, options.check), environment(options))
      if (row === undefined) return undefined
      afterCommitOf(options)(() => { announce(app, resource, 'updated', row) })
      return shownRow(rules, caller, row)
    }
  }
  return served
}
