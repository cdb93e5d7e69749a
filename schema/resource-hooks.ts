// What a declared resource does beyond CRUD: hooks inside its writes, and actions on one row.
// The rules layer runs them (rules/resource-writes.ts) inside the transaction the data layer opens.
import type { TObject } from '@sinclair/typebox'
import type { Key } from './keys.js'
import type { FastifyInstance } from 'fastify'
import type { Db } from '../db/connect.js'
import type { AccessUser } from '../plugins/auth.js'
import type { AccessRule } from './resource.js'

type Values = Record<string, unknown>
/** What a hook may return: nothing, or (where it says so) a replacement. */
type Returns<T> = Promise<T | void> | T | void
/**
 * The columns a write is about to write, typed as the representation types them (each may be left
 * out of a write: a PATCH's, a `before` hook's), and any other column a hook added (a password's hash).
 */
export type WriteValues<Row = Values> = Partial<Row> & Values
/** Who asked for a write: a user, or undefined for one whose rule is `public` (a create only: changes are never public). */
export type WriteCaller = AccessUser | undefined

/**
 * What every hook and action receives. `Caller` is `AccessUser` wherever the write's rule needs a
 * caller: every change, deletion and action, and a create unless its rule is `public`.
 */
export interface WriteContext<Caller extends WriteCaller = WriteCaller> {
  /**
   * The write's own transaction: the row is written with it, so what a hook writes commits with the
   * row, and a hook that throws rolls both back. Use it for every statement of the hook: `app.db`
   * would run outside the write (and, on the embedded database's one connection, wait for it forever).
   * It knows Tandem's tables and the host's own, once the host names them in `HostTables`.
   */
  trx: Db
  /** Who asked: undefined only for a create whose rule is `public`. */
  caller: Caller
  /** The application: Tandem's decorators (`app.accessTokens`, `app.tandemConfig`) and the host's. */
  app: FastifyInstance
  /**
   * Runs `fn` once the write has committed (never if it rolls back): what must only follow a
   * committed write, such as ending sessions on this instance at once.
   */
  afterCommit: (fn: () => void | Promise<void>) => void
}

/**
 * What a `prepare` hook receives: it runs before the write's transaction opens, nothing locked yet,
 * and before a REST create's Idempotency-Key transaction opens too.
 */
export interface PrepareContext<Row = Values, Caller extends WriteCaller = WriteCaller> {
  /**
   * `app.db`, outside any transaction: each statement commits as it runs, so what the hook records
   * (a failed guess) stays whatever the write becomes, refused or rolled back, with or without an
   * Idempotency-Key.
   */
  db: Db
  caller: Caller
  app: FastifyInstance
  values: WriteValues<Row>
  input: Readonly<Values>
}

/**
 * Business rules that run inside a declared resource's writes, whichever style made them. A hook
 * refuses the write by throwing a contract error (`conflict`, `unprocessable`, `forbidden`,
 * `badRequest`: answered in the error model in both styles; anything else is a 500), and nothing
 * of the write remains. `values` are the columns about to be written (the body's, with the owner set
 * to the caller); `input` the write-only inputs the body gave (the declaration's `inputs`: a password; never
 * stored by Tandem, not even in an Idempotency-Key's fingerprint);
 * a `before` hook may return other values to write instead: columns outside the representation too,
 * such as a password's hash. An `after` hook runs before the commit and may
 * return the row to answer with. Update and delete hooks see `current`, the row as it was, locked
 * until the commit. A `prepare` hook runs before the transaction opens (the write's, and a REST
 * create's Idempotency-Key transaction alike), on `app.db`: what it writes stays even when it (or the
 * write) refuses, so a wrong password's failure is recorded, and counts toward a lock as soon with a
 * key as without one. Typed from the declaration: `values` as the representation types its fields,
 * `caller` a user wherever the write's rule needs one (every hook but a `public` create's); `trx`
 * knows the host's tables once it names them in `HostTables` (see `TableOf`).
 * @example
 * hooks: {
 *   async beforeCreate ({ trx, caller }) {
 *     const { count } = await trx.selectFrom('labels').select((eb) => eb.fn.countAll<string>().as('count')).where('owner_id', '=', caller.sub).executeTakeFirstOrThrow()
 *     if (Number(count) >= 50) throw unprocessable('at most 50 labels each', 'name')
 *   }
 * }
 */
export interface ResourceHooks<Row = Values, Creator extends WriteCaller = WriteCaller> {
  /**
   * Before a create's transaction: slow work that should hold no lock (a password's hash), and checks
   * whose records must stay whatever the write becomes. May return the values to write instead.
   */
  prepareCreate?: (context: PrepareContext<Row, Creator>) => Returns<Values>
  /** As `prepareCreate`, before an update's transaction (`id` is the row's; owner rules are checked later, on the locked row). */
  prepareUpdate?: (context: PrepareContext<Row, AccessUser> & { id: Key }) => Returns<Values>
  beforeCreate?: (context: WriteContext<Creator> & { values: WriteValues<Row>, input: Readonly<Values> }) => Returns<Values>
  afterCreate?: (context: WriteContext<Creator> & { values: WriteValues<Row>, input: Readonly<Values>, row: Row }) => Returns<Row>
  beforeUpdate?: (context: WriteContext<AccessUser> & { values: WriteValues<Row>, input: Readonly<Values>, current: Row }) => Returns<Values>
  afterUpdate?: (context: WriteContext<AccessUser> & { values: WriteValues<Row>, input: Readonly<Values>, current: Row, row: Row }) => Returns<Row>
  /**
   * First in the transaction of a create of many rows (an array `POST`, GraphQL `create{Plural}`),
   * before any item's hooks run or its row is written, with every item's checked body (`inputs`, in
   * the order given): take here, in one fixed order, the locks the items will take one by one, so that
   * two batches never wait for each other in a cycle (an order's products, locked by id). Also with a
   * declaration's own `create`.
   */
  beforeCreateMany?: (context: WriteContext<Creator> & { inputs: ReadonlyArray<Readonly<Values>> }) => Returns<never>
  beforeDelete?: (context: WriteContext<AccessUser> & { current: Row }) => Returns<never>
  /** `row` is the deleted row, as it was. */
  afterDelete?: (context: WriteContext<AccessUser> & { row: Row }) => Returns<never>
}

/**
 * Something done to one row that is not a plain change (archiving a label, cancelling an order),
 * served as `POST /{plural}/{id}/{name}` and the GraphQL mutation `{name}{Type}(id, input)`. It runs
 * on the row locked in its own transaction, after `auth` is checked on it (and `If-Match`), and
 * returns the row as it now is (the `returning` of its statement, say), which both styles answer with.
 * @example
 * archive: {
 *   auth: 'owner',
 *   async run ({ trx, row }) {
 *     if (row.archived_at !== null) throw conflict('already archived')
 *     return sql<Label>`update labels set archived_at = now() where id = ${row.id} returning *`.execute(trx).then((r) => r.rows[0])
 *   }
 * }
 */
export interface ActionDeclaration<Row = Values> {
  /** Who may run it: owner rules look at the locked row, as updates do. */
  auth: Exclude<AccessRule, 'public'>
  /**
   * The body (REST) and `input` argument (GraphQL), checked before `run`; none when left out. Mark a
   * secret field `writeOnly: true`, as for a create's `input`.
   */
  input?: TObject
  /** One line for the OpenAPI entry and the GraphQL description. @example 'Archive a label' */
  summary?: string
  run: (context: WriteContext<AccessUser> & { row: Row, input: Values }) => Promise<Row>
}

/**
 * A create whose body is not the row's writable fields (an order's `{ items }`): `input` is the body
 * (REST) and the `input` argument (GraphQL), checked before `run`, which writes the row itself (and
 * anything that goes with it) inside the create's transaction and returns it as the representation
 * shows it. The create keeps the conventions of every create: 201 with `Location`, `Idempotency-Key`,
 * the `created` event when declared.
 * @example
 * create: {
 *   input: Type.Object({ items: Type.Array(Type.Object({ product_id: Type.Integer(), quantity: Type.Integer({ minimum: 1 }) }), { minItems: 1 }) }),
 *   run: async ({ trx, caller, input }) => placeOrder(trx, caller.sub, input.items)
 * }
 */
export interface CreateDeclaration<Row = Values, Creator extends WriteCaller = WriteCaller> {
  /**
   * The body and GraphQL input: an object, closed to unknown fields unless it sets `additionalProperties`.
   * Mark a secret field of it `writeOnly: true` (a field named like a password is taken as one anyway):
   * an Idempotency-Key's fingerprint leaves it out.
   */
  input: TObject
  /** One line for the OpenAPI entry and the GraphQL description. @example 'Place an order' */
  summary?: string
  run: (context: WriteContext<Creator> & { input: Values }) => Promise<Row>
  /**
   * Writes every item of a batch (an array `POST`, `create<Plural>`) at once, in the batch's
   * transaction, instead of `run` once per item: set-based statements, a few for the whole batch.
   * It refuses as `run` would, naming the item with `refusedItem(index, error)`, and returns the rows
   * in the order given. Default: `run` for each item, one after the other.
   * @example runMany: async ({ trx, caller, inputs }) => placeOrders(trx, caller.sub, inputs.map((input) => input.items))
   */
  runMany?: (context: WriteContext<Creator> & { inputs: ReadonlyArray<Values> }) => Promise<Row[]>
}

// Action `create` of `label` would be the mutation `createLabel`, which the resource already has.
const RESERVED_ACTIONS = ['create', 'read', 'update', 'delete']

interface Behaviour {
  name: string
  owner?: string | readonly string[]
  hooks?: object
  create?: unknown
  ownerOnCreate?: unknown
  actions?: Readonly<Record<string, { auth: string }>>
}

/**
 * Throws, at start, on hooks and actions that do not fit the rest of the declaration (their shapes
 * are checked before, by resource-declaration.ts). `relations` are its relation names (their lists
 * share the paths of actions).
 */
export function checkBehaviour (declaration: Behaviour, relations: readonly string[]): void {
  const fail = (message: string): never => { throw new Error(`defineResource(${JSON.stringify(declaration.name)}): ${message}`) }
  if (declaration.create !== undefined) {
    for (const hook of ['beforeCreate', 'afterCreate']) if ((declaration.hooks as Readonly<Record<string, unknown>> | undefined)?.[hook] !== undefined) fail(`create: its run writes the row, so ${hook} would not run; do that work in run`)
    if (declaration.ownerOnCreate !== undefined) fail('create: its run sets the owner, so ownerOnCreate would not run')
  }
  for (const [action, declared] of Object.entries(declaration.actions ?? {})) {
    if (RESERVED_ACTIONS.includes(action)) fail(`action ${action} is taken by the resource's own ${action}`)
    if (relations.includes(action)) fail(`action ${action} is also a relation: both would be /{id}/${action}`)
    if (declared.auth.startsWith('owner') && declaration.owner === undefined) fail(`the ${action} rule ${declared.auth} needs an \`owner\` field`)
  }
}
