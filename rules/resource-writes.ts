// The writes of a declared resource with its hooks and actions, the same for every transport: the
// data layer opens the transaction, and the declaration's business rules run inside it.
import type { FastifyInstance } from 'fastify'
import type { Key } from '../schema/keys.js'
import type { Db } from '../db/connect.js'
import { fromDatabaseError, refersToNothing } from '../db/errors.js'
import type { Precondition } from '../db/locked-write.js'
import type { Row } from '../db/pagination.js'
import type { Around, ResourceData } from '../db/resource.js'
import type { AccessUser } from '../plugins/auth.js'
import { notFound, refusedItem, TandemError, unauthenticated } from '../schema/errors.js'
import { inBatch, underSavepoint } from '../db/transaction.js'
import { servedRelations } from '../schema/relation-targets.js'
import type { Resource } from '../schema/resource.js'
import type { ResourceHooks } from '../schema/resource-hooks.js'
import { changeRefused, changeRule, createdValues, forbidsOthersRows, ownsInRow, readableKeys, readableOwner, readRefused, splitInputs } from './resource.js'

type Values = Record<string, unknown>

/**
 * The database a create or an update is made with: `app.db`, or a function that opens it (a REST
 * POST's Idempotency-Key transaction: `request.writeDb`), which the write calls only once its prepare
 * hook has run. A prepare hook never gets it: it runs on `app.db`, outside any transaction, so that
 * what it records (a failed guess) commits at once and stays whatever the write becomes, with or
 * without a key, and no transaction of the request is open for its statements to wait behind (the
 * embedded database has one connection).
 */
export type WriteDb = Db | (() => Promise<Db>)

/**
 * Where a write is made, for its hooks: the application, and how the transport runs what waits for
 * the commit (a REST create's Idempotency-Key transaction commits after the write: `request.afterCommit`).
 * Without `afterCommit`, the write's own transaction has committed when it returns.
 */
export interface WriteEnvironment {
  app: FastifyInstance
  afterCommit?: ((fn: () => void) => void) | undefined
}

/**
 * A declared resource's writes, hooks included: what both transports call. They apply the rules
 * themselves, so that no transport can leave one out: the owner rules of a change (403, checked on
 * the locked row), a change refused on a row the caller may not read answered as reads answer it
 * (undefined, as for no such row; 403 with `othersRows: 'forbidden'`), and a writable foreign key
 * set only to a row the caller may read (else the 422 of a missing one).
 */
export interface ResourceWrites {
  /**
   * Creates the row from a body: the owner set to the caller, then `prepareCreate`, `beforeCreate` (given the write-only inputs), the insert,
   * `afterCreate`; or, for a declaration's own `create`, its `run` with the body, in the create's transaction.
   * `under` is the parent's id of a resource that lives under one (its key's value; 404 naming the parent when there is none).
   */
  create: (db: WriteDb, caller: AccessUser | undefined, body: Values, env: WriteEnvironment, under?: Key) => Promise<Row>
  /**
   * Changes the row with a body's values (write-only inputs to the hooks; `check`, the transport's
   * `If-Match`, runs on the row locked first, once the rules allow the change); undefined when there is no such row.
   */
  update: (db: WriteDb, id: Key, caller: AccessUser | undefined, body: Values, check: Precondition<Row> | undefined, env: WriteEnvironment) => Promise<Row | undefined>
  /**
   * Creates a row from each body, in one transaction (`beforeCreateMany` first), each as `create`
   * would: the rows in the order given. The first item refused ends the batch, nothing written, with
   * its error's `field` naming the item (`[3].name`).
   */
  createMany: (db: WriteDb, caller: AccessUser | undefined, bodies: readonly Values[], env: WriteEnvironment, under?: Key) => Promise<Row[]>
  /**
   * Changes, in one transaction, each row `find` locks in it (ids, in the order to change them), as
   * `update` would (the owner check on the row, the update hooks): the rows as they now are.
   */
  updateMany: (db: WriteDb, caller: AccessUser | undefined, find: (trx: Db) => Promise<readonly Key[]>, body: Values, env: WriteEnvironment) => Promise<Row[]>
  /** Deletes, in one transaction, each row `find` locks in it, as `remove` would: the rows as they were. */
  removeMany: (db: Db, caller: AccessUser | undefined, find: (trx: Db) => Promise<readonly Key[]>, env: WriteEnvironment) => Promise<Row[]>
  /** Deletes the row (`check` runs on it locked first, as for `update`): the row as it was, or undefined when there was none. */
  remove: (db: Db, id: Key, caller: AccessUser | undefined, check: Precondition<Row> | undefined, env: WriteEnvironment) => Promise<Row | undefined>
  /**
   * Runs the declared action `name` on the locked row once its rule allows `caller` (and `check`, the
   * transport's `If-Match`, passes): the row as the action leaves it, or undefined when there is no such row.
   */
  act: (db: Db, name: string, id: Key, caller: AccessUser | undefined, input: Values, check: Precondition<Row> | undefined, env: WriteEnvironment) => Promise<Row | undefined>
}

/** A change refused on a row its caller may not read: answered as no such row. */
class HiddenRow extends Error {}

/** `write`'s result, or undefined when it found the row hidden from its caller (as for no such row). */
async function unlessHidden<T> (write: () => Promise<T>): Promise<T | undefined> {
  try {
    return await write()
  } catch (error) {
    if (error instanceof HiddenRow) return undefined
    throw error
  }
}

/**
 * The error of the item at `index` of a batch as the batch's answer: a client's error (a refused
 * body, a hook's refusal, a constraint) with its `field` naming the item, `[3].name` (`[3]` when it
 * names no field); anything else as it is (a 500, a 503).
 */
export function itemError (index: number, error: unknown): unknown {
  const known = error instanceof TandemError ? error : fromDatabaseError(error)
  if (known === undefined || known.statusCode >= 500) return error
  return refusedItem(index, known)
}

/** `work`'s result, its error as the item's at `index` (see `itemError`). */
export async function asItem<T> (index: number, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    throw itemError(index, error)
  }
}

type Later = () => void | Promise<void>

/** The database a prepare hook runs on: `app.db`, the write's own not yet opened (see `WriteDb`). */
function preparing (db: WriteDb, env: WriteEnvironment): Db {
  // An open transaction would take the hook's records with it (or, on one connection, never let them run).
  if (typeof db !== 'function' && db.isTransaction) throw new Error('a write with a prepare hook was given an open transaction: give a function that opens it')
  return env.app.db
}

/** The write's database, opened once its prepare hook is done. */
const opened = async (db: WriteDb): Promise<Db> => typeof db === 'function' ? await db() : db

/**
 * Runs `write` with a hooks' `afterCommit` that collects what waits for the commit, then hands it to
 * the transport's, or, the write having committed, runs it before answering (a deletion's sessions
 * end on this instance before its answer). A write that throws drops it.
 */
async function committing<T> (env: WriteEnvironment, write: (afterCommit: (fn: Later) => void) => Promise<T>): Promise<T> {
  const waiting: Later[] = []
  const result = await write((fn) => { waiting.push(fn) })
  // A failure after the commit cannot undo the write: it is logged, not answered.
  const run = async (fn: Later) => { await Promise.resolve().then(fn).catch((error: unknown) => { env.app.log.error({ err: error }, 'a hook\'s afterCommit failed') }) }
  for (const fn of waiting) {
    if (env.afterCommit === undefined) await run(fn)
    else env.afterCommit(() => { run(fn).catch(() => {}) })
  }
  return result
}

/**
 * The caller of a change, a deletion or an action, whose rules are never `public`: the served resource
 * refused a call without one (401) before any of its hooks could run, and so does this, should a call
 * reach the writes another way (hooks and actions are typed with a caller there).
 */
function signedIn (caller: AccessUser | undefined): AccessUser {
  if (caller === undefined) throw unauthenticated()
  return caller
}

/**
 * The writes of `resource` through its statements `data`. Only the writes a declaration hooks get an
 * `Around`: the others are the data layer's plain statements, with no transaction added.
 * `resources` are every served resource, where its relations' targets are found.
 */
export function resourceWrites (resource: Resource, data: ResourceData, resources: readonly Resource[]): ResourceWrites {
  const { prepareCreate, beforeCreate, afterCreate, beforeCreateMany, prepareUpdate, beforeUpdate, afterUpdate, beforeDelete, afterDelete } = (resource.hooks ?? {}) as unknown as ResourceHooks<Row>
  const actions = resource.actions ?? {}
  const relations = servedRelations(resource, resources)
  const readable = (caller: AccessUser | undefined) => readableKeys(resource, relations, caller)
  // A change the rules refuse on a row the caller may not read is answered as a read of it is: as no
  // such row (404), or 403 with `othersRows: 'forbidden'`; on a row they may read, 403. The row is
  // the caller's when they own it by a column of it, or, through a relation, by the data layer's
  // answer in the write's transaction, which share-locks what it reads (a parent, a join table's row).
  const refuse = (refused: Error, caller: AccessUser | undefined): never => {
    // Not their own: readable when the read rule does not narrow them to their own rows.
    if (readableOwner(resource, caller) === undefined || forbidsOthersRows(resource)) throw refused
    throw new HiddenRow()
  }
  const mayChange = async (action: string, caller: AccessUser | undefined, row: Values, trx: Db): Promise<void> => {
    const refused = changeRefused(resource, action, caller)
    // A rule of the change broader than the read rule still changes only rows the caller may read:
    // another's row is hidden from them, and its answer would show it.
    // An administrator whom the rule admits as one (`admin`, `ownerOrAdmin`) changes any row, as it says.
    const rule = changeRule(resource, action)
    const asAdmin = caller?.role === 'admin' && (rule === 'admin' || rule === 'ownerOrAdmin')
    const narrowed = !asAdmin && readableOwner(resource, caller) !== undefined
    if (refused === undefined && !narrowed) return
    if (caller !== undefined && (ownsInRow(resource, caller.sub, row) ?? await data.owns(trx, row[resource.key] as Key, caller.sub))) return
    if (refused !== undefined) refuse(refused, caller)
    if (forbidsOthersRows(resource)) throw readRefused(resource)
    throw new HiddenRow()
  }
  // An owner that is the key is known from the id asked: owner rules refuse before the row is looked
  // for, so a caller who may not change it learns nothing of whether it exists (403, or, where the
  // read rule hides another's row, 404, whether it exists or not).
  const ownedByKey = resource.owner === resource.key && resource.owners.length === 1
  const mayChangeId = (action: string, caller: AccessUser | undefined, id: Key): void => {
    if (!ownedByKey) return
    const refused = changeRefused(resource, action, caller)
    if (refused !== undefined && (caller === undefined || ownsInRow(resource, caller.sub, { [resource.key]: id }) !== true)) refuse(refused, caller)
  }
  // The rules first, then the transport's `If-Match`.
  const checked = (action: string, caller: AccessUser | undefined, check: Precondition<Row> | undefined): Precondition<Row> => async (current, trx) => {
    await mayChange(action, caller, current, trx)
    await check?.(current, trx)
  }
  const ownCreate = resource.create
  type Context<Caller = AccessUser | undefined> = { caller: Caller, app: FastifyInstance, afterCommit: (fn: Later) => void }

  const creating = (context: Context, given: Values, input: Values): Around<undefined> | undefined =>
    beforeCreate === undefined && afterCreate === undefined
      ? undefined
      : async (trx, _none, write) => {
        const values = await beforeCreate?.({ ...context, trx, values: given, input }) ?? given
        const row = await write(values)
        return await afterCreate?.({ ...context, trx, values, input, row }) ?? row
      }
  const updating = (context: Context<AccessUser>, given: Values, input: Values): Around<Row> | undefined =>
    beforeUpdate === undefined && afterUpdate === undefined
      ? undefined
      : async (trx, current, write) => {
        const values = await beforeUpdate?.({ ...context, trx, values: given, input, current }) ?? given
        const row = await write(values)
        return await afterUpdate?.({ ...context, trx, values, input, current, row }) ?? row
      }
  const removing = (context: Context<AccessUser>): Around<Row> | undefined =>
    beforeDelete === undefined && afterDelete === undefined
      ? undefined
      : async (trx, current, write) => {
        await beforeDelete?.({ ...context, trx, current })
        const row = await write({})
        await afterDelete?.({ ...context, trx, row })
        return row
      }

  /** A create's values: the body's columns, the owner, the parent's key, then `prepareCreate` (on `app.db`, before the write's transaction). */
  const prepared = async (writeDb: WriteDb, caller: AccessUser | undefined, body: Values, env: WriteEnvironment, under: Key | undefined): Promise<{ values: Values, input: Values }> => {
    const { values: columns, input } = splitInputs(resource, body)
    const given = createdValues(resource, caller, columns)
    if (resource.under !== undefined) given[resource.under.key] = under
    const values = prepareCreate === undefined ? given : await prepareCreate({ db: preparing(writeDb, env), caller, app: env.app, values: given, input }) ?? given
    return { values, input }
  }
  /** The row inserted with its create hooks around it. */
  const inserted = async (db: Db, caller: AccessUser | undefined, values: Values, input: Values, env: WriteEnvironment, afterCommit: (fn: Later) => void): Promise<Row> =>
    data.create(db, values, creating({ caller, app: env.app, afterCommit }, values, input), readable(caller))
  /** The row a declaration's own `create` writes. */
  const ownRow = async (db: Db, caller: AccessUser | undefined, body: Values, env: WriteEnvironment, afterCommit: (fn: Later) => void): Promise<Row> =>
    data.create(db, body, async (trx) => await (ownCreate as NonNullable<typeof ownCreate>).run({ trx, caller, app: env.app, afterCommit, input: body }) as Row)
  const inOneStatement = resource.bulk.create === 'inOneStatement'
  /**
   * A batch's rows as `bulk: { create: 'inOneStatement' }` writes them: every item's `beforeCreate` in
   * order, the rows in one statement, then every item's `afterCreate`. When the statement is refused (a
   * constraint), the rows are inserted one at a time to find the first item the table refuses, and the
   * batch ends with its error, named.
   */
  const insertedTogether = async (trx: Db, caller: AccessUser | undefined, items: ReadonlyArray<{ values: Values, input: Values }>, env: WriteEnvironment, afterCommit: (fn: Later) => void): Promise<Row[]> => {
    const context = { caller, app: env.app, afterCommit }
    const written: Values[] = []
    for (const [index, { values, input }] of items.entries()) written.push(await asItem(index, async () => await beforeCreate?.({ ...context, trx, values, input }) ?? values))
    let rows: Row[]
    try {
      rows = await underSavepoint(trx, async () => data.createRows(trx, written))
    } catch (error) {
      const known = fromDatabaseError(error)
      if (known === undefined || known.statusCode >= 500) throw error
      for (const [index, values] of written.entries()) await asItem(index, async () => data.create(trx, values))
      throw error
    }
    if (afterCreate === undefined) return rows
    const answered: Row[] = []
    for (const [index, row] of rows.entries()) {
      answered.push(await asItem(index, async () => await afterCreate({ ...context, trx, values: written[index] as Values, input: (items[index] as { input: Values }).input, row }) ?? row))
    }
    return data.shownRows(answered)
  }
  /** `write`, whose parent (`under`) is found by the key's foreign key in the insert itself: no statement added, no race. */
  const parentFound = async <T>(write: () => Promise<T>): Promise<T> => {
    if (resource.under === undefined) return write()
    const { key, target } = resource.under
    try {
      return await write()
    } catch (error) {
      // In a batch, the item's error names the field it refused: the parent's key.
      if (refersToNothing(error, key) || (error instanceof TandemError && error.field?.endsWith(`.${key}`) === true && error.statusCode === 422)) throw notFound(target)
      throw error
    }
  }

  return {
    async create (writeDb, caller, body, env, under) {
      if (ownCreate !== undefined) {
        const db = await opened(writeDb)
        return committing(env, async (afterCommit) => ownRow(db, caller, body, env, afterCommit))
      }
      const { values, input } = await prepared(writeDb, caller, body, env, under)
      const db = await opened(writeDb)
      return parentFound(async () => await committing(env, async (afterCommit) => inserted(db, caller, values, input, env, afterCommit)))
    },
    async createMany (writeDb, caller, bodies, env, under) {
      // The prepare hooks first, each before the transaction as for one create, in order: the first item refused decides.
      const items: Array<{ values: Values, input: Values }> = []
      if (ownCreate === undefined) for (const [index, body] of bodies.entries()) items.push(await asItem(index, async () => prepared(writeDb, caller, body, env, under)))
      const db = await opened(writeDb)
      const runMany = ownCreate?.runMany
      return parentFound(async () => await committing(env, async (afterCommit) => inBatch(db, async (trx) => {
        await beforeCreateMany?.({ trx, caller, app: env.app, afterCommit, inputs: bodies })
        // A create of its own that writes a whole batch at once: a few statements, not a few per item.
        if (runMany !== undefined) {
          const rows = await runMany({ trx, caller, app: env.app, afterCommit, inputs: bodies }) as Row[]
          if (rows.length !== bodies.length) throw new Error(`${resource.name}: create.runMany answered ${rows.length} rows for ${bodies.length} items`)
          return data.shownRows(rows)
        }
        if (inOneStatement && ownCreate === undefined && readable(caller).length === 0) return insertedTogether(trx, caller, items, env, afterCommit)
        const rows: Row[] = []
        // One after the other: a hook of an item sees the rows of the items before it.
        for (const [index, body] of bodies.entries()) {
          rows.push(await asItem(index, async () => {
            if (ownCreate !== undefined) return ownRow(trx, caller, body, env, afterCommit)
            const { values, input } = items[index] as { values: Values, input: Values }
            return inserted(trx, caller, values, input, env, afterCommit)
          }))
        }
        return rows
      })))
    },
    async update (writeDb, id, caller, body, check, env) {
      return unlessHidden(async () => {
        mayChangeId('update', caller, id)
        const split = splitInputs(resource, body)
        const values = prepareUpdate === undefined ? split.values : await prepareUpdate({ db: preparing(writeDb, env), caller: signedIn(caller), app: env.app, id, values: split.values, input: split.input }) ?? split.values
        const db = await opened(writeDb)
        return committing(env, async (afterCommit) => data.update(db, id, values, checked('update', caller, check), updating({ caller: signedIn(caller), app: env.app, afterCommit }, values, split.input), readable(caller)))
      })
    },
    async remove (db, id, caller, check, env) {
      return unlessHidden(async () => {
        mayChangeId('delete', caller, id)
        return committing(env, async (afterCommit) => data.remove(db, id, checked('delete', caller, check), removing({ caller: signedIn(caller), app: env.app, afterCommit })))
      })
    },
    async updateMany (writeDb, caller, find, body, env) {
      const { values, input } = splitInputs(resource, body)
      const db = await opened(writeDb)
      return committing(env, async (afterCommit) => inBatch(db, async (trx) => {
        const rows: Row[] = []
        for (const id of await find(trx)) {
          const row = await data.update(trx, id, values, checked('update', caller, undefined), updating({ caller: signedIn(caller), app: env.app, afterCommit }, values, input), readable(caller))
          if (row !== undefined) rows.push(row)
        }
        return rows
      }))
    },
    async removeMany (db, caller, find, env) {
      return committing(env, async (afterCommit) => inBatch(db, async (trx) => {
        const rows: Row[] = []
        for (const id of await find(trx)) {
          const row = await data.remove(trx, id, checked('delete', caller, undefined), removing({ caller: signedIn(caller), app: env.app, afterCommit }))
          if (row !== undefined) rows.push(row)
        }
        return rows
      }))
    },
    async act (db, name, id, caller, input, check, env) {
      const action = actions[name]
      if (action === undefined) throw notFound(`action ${name} of ${resource.name}`)
      return unlessHidden(async () => {
        mayChangeId(name, caller, id)
        return committing(env, async (afterCommit) => data.withLocked(db, id, checked(name, caller, check), async (trx, row) => await action.run({ trx, caller: signedIn(caller), app: env.app, afterCommit, row, input }) as Row))
      })
    }
  }
}
