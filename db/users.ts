import { sql } from 'kysely'
import type { Db } from './connect.js'
import { inTransaction } from './transaction.js'
import { lockedWrite, type Precondition } from './locked-write.js'
import { listRows, OWNER_FILTER, paginate, parseFields, READABLE_SEARCH, selectColumns, type ListContext, type ListPage, type ListParams, type ListSpec } from './pagination.js'
import { idArray } from './relations.js'
import { searchFilter } from './search.js'
import { userScope } from './idempotency.js'
import { revokeTokensOf } from './revoked-tokens.js'
import type { UserRow } from './types.js'
import type { Message } from './auth.js'

export type User = Pick<UserRow, 'id' | 'name' | 'email' | 'created_at'>
/** A user narrowed by `fields=`: the id always, the rest as asked. */
export type UserSelection = Partial<User> & Pick<User, 'id'>

export const userList: ListSpec<'users'> = {
  table: 'users',
  columns: ['id', 'name', 'email', 'created_at'],
  sortable: { id: {}, name: {}, created_at: {} },
  filters: {
    email: { where: (query, email) => query.where(sql`lower(email)`, '=', email) },
    name: { where: (query, name) => query.where('name', '=', name) },
    q: searchFilter(sql`(name || ' ' || email)`),
    // For callers who may not read every email (rules/field-rules.ts): their own row, and `q` on names.
    [OWNER_FILTER]: { where: (query, id) => query.where('id', '=', id) },
    [READABLE_SEARCH]: searchFilter(sql`name`)
  }
}

/** The users' list filters, each with its field, and the fields `q` searches: what field rules look at. */
export const userFilterFields = [{ name: 'email', field: 'email' }, { name: 'name', field: 'name' }] as const
export const userSearchFields = ['name', 'email'] as const

export interface UserFilters {
  email?: string | undefined
  name?: string | undefined
  q?: string | undefined
}

/** A page of users; `narrow` may add filters to those the request gave (the caller's own row: rules/field-rules.ts). */
export async function listUsers (db: Db, params: ListParams & UserFilters, context: Omit<ListContext, 'filters'>, narrow?: (filters: Record<string, unknown>) => void): Promise<ListPage> {
  const filters = userListFilters(params)
  narrow?.(filters)
  return await paginate(db, userList, params, { ...context, filters })
}

/** The filters of a users list as its parameters give them (emails are kept in lower case). */
export function userListFilters (params: UserFilters): Record<string, unknown> {
  return { email: params.email?.toLowerCase(), name: params.name, q: params.q }
}

/** Users in id order from `offset` on under `filters`, without a cursor or a count (the query style's `users`). */
export async function userRows (db: Db, params: { limit?: number | undefined, offset?: number | undefined }, filters: Record<string, unknown> = {}): Promise<User[]> {
  return await listRows(db, userList, params, filters) as User[]
}

export async function findUser (db: Db, id: number, fields?: string): Promise<UserSelection | undefined> {
  const query = selectColumns(db.selectFrom('users').where('id', '=', id), userList, parseFields(userList, fields))
  return await query.executeTakeFirst() as UserSelection | undefined
}

export interface NewUserInput {
  name: string
  email: string
  passwordHash?: string | null | undefined
}

const representation = ['id', 'name', 'email', 'created_at'] as const

/** Creates the user and its empty profile in one transaction. */
export async function createUser (db: Db, input: NewUserInput): Promise<User> {
  return inTransaction(db, async (trx) => {
    const user = await trx.insertInto('users')
      .values({ name: input.name, email: input.email, password_hash: input.passwordHash ?? null })
      .returning(representation)
      .executeTakeFirstOrThrow()
    await trx.insertInto('profiles').values({ user_id: user.id }).execute()
    return user
  })
}

export interface UserChanges {
  name?: string | undefined
  email?: string | undefined
}

export interface UpdateOptions {
  /** Refuses the write on the current row (a stale `If-Match`, say). */
  check?: Precondition<User> | undefined
  /** When the email changes, the message queued to the old address, kept until `expiresAt`. */
  emailChangeNotice?: { compose: (before: User, after: User) => Message, expiresAt: Date } | undefined
}

/** Applies the changes given (PATCH) or all of them (PUT); undefined when there is no such user. */
export async function updateUser (db: Db, id: number, changes: UserChanges, options: UpdateOptions = {}): Promise<User | undefined> {
  const values: Record<string, unknown> = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined))
  // A new address has not been verified yet; the same address in another case still is.
  if (changes.email !== undefined) {
    values.email_verified_at = sql`case when lower(email) = lower(${changes.email}) then email_verified_at end`
  }
  const { check, emailChangeNotice } = options
  if (check === undefined && changes.email === undefined && Object.keys(values).length > 0) {
    return db.updateTable('users').set(values).where('id', '=', id).returning(representation).executeTakeFirst()
  }
  return lockedWrite(db, lock(id), check, async (trx, current) => {
    if (Object.keys(values).length === 0) return current
    const updated = await trx.updateTable('users').set(values).where('id', '=', id).returning(representation).executeTakeFirst()
    if (updated !== undefined && emailChangeNotice !== undefined && updated.email.toLowerCase() !== current.email.toLowerCase()) {
      await trx.insertInto('email_outbox').values({
        user_id: id,
        recipient: current.email,
        kind: 'email_changed',
        ...emailChangeNotice.compose(current, updated),
        expires_at: emailChangeNotice.expiresAt
      }).execute()
    }
    return updated
  })
}

const lock = (id: number) => (trx: Db) => trx.selectFrom('users').select(representation).where('id', '=', id).forUpdate().executeTakeFirst()

/**
 * Deletes the user with everything it owns (profile, posts, comments, orders, queued emails,
 * one-time tokens cascade; idempotency records go too), in one transaction that first gives back
 * the stock its open (pending or paid) orders still hold and ends every access token of theirs
 * (they have all expired by `tokensExpireBy`).
 *
 * The open orders are locked (`for update`) before their stock is counted: a cancel under way makes
 * the lock wait, and the order, read again once the cancel commits, is no longer open, so its stock
 * goes back once (by the cancel); a cancel that comes later waits, then finds no order (404).
 * Locks go user → orders → products, each set in id order, as a cancel and placing an order take
 * them (`createOrder` takes its user first), so none of them can deadlock with this.
 */
export async function deleteUser (db: Db, id: number, tokensExpireBy: Date, check?: Precondition<User>): Promise<boolean> {
  const deleted = await lockedWrite(db, lock(id), check, async (trx) => {
    await revokeTokensOf(trx, id, tokensExpireBy)
    await trx.deleteFrom('idempotency_keys').where('scope', '=', userScope(id)).execute()
    const open = await trx.selectFrom('orders').select('id')
      .where('user_id', '=', id).where('status', 'in', ['pending', 'paid'])
      .orderBy('id').forUpdate().execute()
    if (open.length > 0) {
      const orderIds = sql<number>`any(${idArray(open.map((o) => o.id))}::bigint[])`
      await trx.selectFrom('products').select('id')
        .where('id', 'in', trx.selectFrom('order_items').select('product_id').where('order_id', '=', orderIds))
        .orderBy('id').forUpdate().execute()
      await sql`
        update products set stock = products.stock + held.quantity
        from (
          select product_id, sum(quantity) as quantity from order_items
          where order_id = ${orderIds}
          group by product_id
        ) held
        where products.id = held.product_id`.execute(trx)
    }
    await trx.deleteFrom('users').where('id', '=', id).execute()
    return true
  })
  return deleted ?? false
}
