// What an account's writes do beyond its row: the users' declaration (rules/users.ts) runs these in
// its hooks, inside the write's transaction.
import { sql, type RawBuilder } from 'kysely'
import type { Db } from './connect.js'
import { idArray } from './relations.js'
import { userScope } from './idempotency.js'
import { revokeTokensOf } from './revoked-tokens.js'
import type { Message } from './auth.js'

/** The verification of an address that becomes `email`: kept for the same address in another case, cleared for a new one. */
export function verifiedUnlessChanged (email: string): RawBuilder<Date | null> {
  return sql<Date | null>`case when lower(email) = lower(${email}) then email_verified_at end`
}

/** Makes a new user's empty profile, in the sign-up's transaction. */
export async function createProfile (trx: Db, userId: number): Promise<void> {
  await trx.insertInto('profiles').values({ user_id: userId }).execute()
}

/** The user's email as stored, or undefined when there is no such user. */
export async function storedEmail (db: Db, id: number): Promise<string | undefined> {
  return (await db.selectFrom('users').select('email').where('id', '=', id).executeTakeFirst())?.email
}

/** Queues `message` to the address a user had, kept in the outbox until `expiresAt`. */
export async function queueNotice (trx: Db, userId: number, recipient: string, message: Message, expiresAt: Date): Promise<void> {
  await trx.insertInto('email_outbox').values({ user_id: userId, recipient, kind: 'email_changed', ...message, expires_at: expiresAt }).execute()
}

/**
 * What goes before a user's row is deleted, in the deletion's transaction, the user's row locked
 * (everything else it owns cascades: profile, posts, comments, orders, queued emails, one-time
 * tokens): every access token of theirs ends (they have all expired by `tokensExpireBy`), their
 * idempotency records go, and the stock their open (pending or paid) orders still hold is given back.
 *
 * The open orders are locked (`for update`) before their stock is counted: a cancel under way makes
 * the lock wait, and the order, read again once the cancel commits, is no longer open, so its stock
 * goes back once (by the cancel); a cancel that comes later waits, then finds no order (404).
 * Locks go user → orders → products, each set in id order, as a cancel and placing an order take
 * them (`placeOrder` takes its user first), so none of them can deadlock with this.
 */
export async function releaseUser (trx: Db, id: number, tokensExpireBy: Date): Promise<void> {
  await revokeTokensOf(trx, id, tokensExpireBy)
  await trx.deleteFrom('idempotency_keys').where('scope', '=', userScope(id)).execute()
  const open = await trx.selectFrom('orders').select('id')
    .where('user_id', '=', id).where('status', 'in', ['pending', 'paid'])
    .orderBy('id').forUpdate().execute()
  if (open.length === 0) return
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
