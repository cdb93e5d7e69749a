import { sql } from 'kysely'
import type { Db } from './connect.js'
import { inTransaction } from './transaction.js'
import { revokeTokensOf } from './revoked-tokens.js'
import type { UserRow, UserTokenKind } from './types.js'

export type Role = UserRow['role']

export interface LoginAccount {
  id: number
  role: Role
  password_hash: string | null
}

/** The account an email signs in to (emails compare case-insensitively, on the `lower(email)` index). */
export async function findLoginAccount (db: Db, email: string): Promise<LoginAccount | undefined> {
  return db.selectFrom('users').select(['id', 'role', 'password_hash'])
    .where(sql`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst()
}

/** Creates the administrator, or makes the user with that email one and resets its password. */
export async function ensureAdmin (db: Db, email: string, passwordHash: string): Promise<number> {
  return inTransaction(db, async (trx) => {
    const { id } = await trx.insertInto('users')
      .values({ name: 'Administrator', email, password_hash: passwordHash, role: 'admin' })
      .onConflict((oc) => oc.expression(sql`lower(email)`).doUpdateSet({ role: 'admin', password_hash: passwordHash }))
      .returning('id')
      .executeTakeFirstOrThrow()
    await trx.insertInto('profiles').values({ user_id: id }).onConflict((oc) => oc.column('user_id').doNothing()).execute()
    return id
  })
}

export interface Message {
  subject: string
  body: string
}

export interface NewOneTimeToken {
  userId: number
  kind: UserTokenKind
  tokenHash: string
  expiresAt: Date
  /** Writes the message a mailer sends, from the user it goes to. */
  compose: (user: { name: string, email: string }) => Message
}

/** Stores a one-time token's hash and queues its message, in one transaction; false when there is no such user. */
export async function createOneTimeToken (db: Db, input: NewOneTimeToken): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const user = await trx.selectFrom('users').select(['name', 'email']).where('id', '=', input.userId).executeTakeFirst()
    if (user === undefined) return false
    await trx.insertInto('user_tokens')
      .values({ token_hash: input.tokenHash, user_id: input.userId, kind: input.kind, email: user.email, expires_at: input.expiresAt })
      .execute()
    await trx.insertInto('email_outbox').values({ recipient: user.email, kind: input.kind, ...input.compose(user) }).execute()
    return true
  })
}

/**
 * Marks the token used and returns its user, if it is unused, unexpired and of that kind; the
 * user's other tokens of the kind are spent with it. A verify token also needs the user to still
 * have the address it was sent to. Concurrent uses of one token: only one gets the row.
 */
async function consume (db: Db, kind: UserTokenKind, tokenHash: string): Promise<number | undefined> {
  let query = db.updateTable('user_tokens').set({ used_at: sql<Date>`now()` })
    .where('token_hash', '=', tokenHash)
    .where('kind', '=', kind)
    .where('used_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
  if (kind === 'verify_email') {
    query = query.where(({ exists, selectFrom }) => exists(selectFrom('users').select('users.id')
      .whereRef('users.id', '=', 'user_tokens.user_id')
      .where(sql<boolean>`lower(users.email) = lower(user_tokens.email)`)))
  }
  const row = await query.returning('user_id').executeTakeFirst()
  if (row === undefined) return undefined
  await db.updateTable('user_tokens').set({ used_at: sql<Date>`now()` })
    .where('user_id', '=', row.user_id).where('kind', '=', kind).where('used_at', 'is', null)
    .execute()
  return row.user_id
}

/** Sets `email_verified_at` with a verify-email token; false when the token is not usable. */
export async function verifyEmail (db: Db, tokenHash: string): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const userId = await consume(trx, 'verify_email', tokenHash)
    if (userId === undefined) return false
    await trx.updateTable('users').set({ email_verified_at: sql<Date>`now()` }).where('id', '=', userId).execute()
    return true
  })
}

/**
 * Sets the password with a reset-password token and revokes every access token the user had (they
 * expire by `tokensExpireBy`), in one transaction; false when the token is not usable.
 */
export async function resetPassword (db: Db, tokenHash: string, passwordHash: string, tokensExpireBy: Date): Promise<boolean> {
  return inTransaction(db, async (trx) => {
    const userId = await consume(trx, 'reset_password', tokenHash)
    if (userId === undefined) return false
    await trx.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId).execute()
    await revokeTokensOf(trx, userId, tokensExpireBy)
    return true
  })
}
