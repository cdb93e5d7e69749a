// The writes of a declared resource with its hooks and actions, the same for every transport: the
// data layer opens the transaction, and the declaration's business rules run inside it.
import type { Db } from '../db/connect.js'
import { refersToNothing } from '../db/errors.js'
import type { Precondition } from '../db/locked-write.js'
import type { Row } from '../db/pagination.js'
import type { Around, ResourceData } from '../db/resource.js'
import type { AccessUser } from '../plugins/auth.js'
import { notFound } from '../schema/errors.js'
import type { Resource } from '../schema/resource.js'
import type { ResourceHooks } from '../schema/resource-hooks.js'
import { assertMayChange, createdValues, splitInputs } from './resource.js'

type Values = Record<string, unknown>

/** A declared resource's writes, hooks included: what both transports call. */
export interface ResourceWrites {
  /**
   * Creates the row from a body: the owner set to the caller, then `beforeCreate` (given the write-only inputs), the insert,
   * `afterCreate`; or, for a declaration's own `create`, its `run` with the body, in the create's transaction.
   * `under` is the parent's id of a resource that lives under one (its key's value; 404 naming the parent when there is none).
   */
  create: (db: Db, caller: AccessUser | undefined, body: Values, under?: number) => Promise<Row>
  /** Changes the row with a body's values (write-only inputs to the hooks; `check` runs on the row locked first); undefined when there is no such row. */
  update: (db: Db, id: number, caller: AccessUser, body: Values, check: Precondition<Row>) => Promise<Row | undefined>
  /** Deletes the row (`check` runs on it locked first): the row as it was, or undefined when there was none. */
  remove: (db: Db, id: number, caller: AccessUser, check: Precondition<Row>) => Promise<Row | undefined>
  /**
   * Runs the declared action `name` on the locked row once its rule allows `caller` (and `check`, the
   * transport's `If-Match`, passes): the row as the action leaves it, or undefined when there is no such row.
   */
  act: (db: Db, name: string, id: number, caller: AccessUser, input: Values, check?: Precondition<Row>) => Promise<Row | undefined>
}

/**
 * The writes of `resource` through its statements `data`. Only the writes a declaration hooks get an
 * `Around`: the others are the data layer's plain statements, with no transaction added.
 */
export function resourceWrites (resource: Resource, data: ResourceData): ResourceWrites {
  const { beforeCreate, afterCreate, beforeUpdate, afterUpdate, beforeDelete, afterDelete } = (resource.declaration.hooks ?? {}) as unknown as ResourceHooks<Row>
  const actions = resource.declaration.actions ?? {}
  // An owner that is the key is known from the id asked: owner rules refuse before the row is looked
  // for, so a caller who may not change it learns nothing of whether it exists (403, not 404).
  const ownedByKey = resource.declaration.owner === resource.key
  const mayChange = (action: string, caller: AccessUser, id: number): void => {
    if (ownedByKey) assertMayChange(resource, action, caller, { [resource.key]: id })
  }
  const ownCreate = resource.declaration.create

  const creating = (caller: AccessUser | undefined, given: Values, input: Values): Around<undefined> | undefined =>
    beforeCreate === undefined && afterCreate === undefined
      ? undefined
      : async (trx, _none, write) => {
        const values = await beforeCreate?.({ trx, caller, values: given, input }) ?? given
        const row = await write(values)
        return await afterCreate?.({ trx, caller, values, input, row }) ?? row
      }
  const updating = (caller: AccessUser, given: Values, input: Values): Around<Row> | undefined =>
    beforeUpdate === undefined && afterUpdate === undefined
      ? undefined
      : async (trx, current, write) => {
        const values = await beforeUpdate?.({ trx, caller, values: given, input, current }) ?? given
        const row = await write(values)
        return await afterUpdate?.({ trx, caller, values, input, current, row }) ?? row
      }
  const removing = (caller: AccessUser): Around<Row> | undefined =>
    beforeDelete === undefined && afterDelete === undefined
      ? undefined
      : async (trx, current, write) => {
        await beforeDelete?.({ trx, caller, current })
        const row = await write({})
        await afterDelete?.({ trx, caller, row })
        return row
      }

  return {
    async create (db, caller, body, under) {
      if (ownCreate !== undefined) return data.create(db, body, async (trx) => await ownCreate.run({ trx, caller, input: body }) as Row)
      const { values: columns, input } = splitInputs(resource, body)
      const values = createdValues(resource, caller, columns)
      if (resource.under === undefined) return data.create(db, values, creating(caller, values, input))
      const { key, target } = resource.under
      values[key] = under
      // The key's foreign key finds the parent in the insert itself: no statement added, no race.
      try {
        return await data.create(db, values, creating(caller, values, input))
      } catch (error) {
        if (refersToNothing(error, key)) throw notFound(target)
        throw error
      }
    },
    async update (db, id, caller, body, check) {
      mayChange('update', caller, id)
      const { values, input } = splitInputs(resource, body)
      return data.update(db, id, values, check, updating(caller, values, input))
    },
    async remove (db, id, caller, check) {
      mayChange('delete', caller, id)
      return data.remove(db, id, check, removing(caller))
    },
    async act (db, name, id, caller, input, check) {
      const action = actions[name]
      if (action === undefined) throw notFound(`action ${name} of ${resource.name}`)
      mayChange(name, caller, id)
      return data.withLocked(db, id, (current) => {
        assertMayChange(resource, name, caller, current)
        check?.(current)
      }, async (trx, row) => await action.run({ trx, caller, row, input }) as Row)
    }
  }
}
