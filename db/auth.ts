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
  token_version: number
}

/** The account an email signs in to (emails compare case-insensitively, on the `lower(email)` index). */
export async function findLoginAccount (db: Db, email: string): Promise<LoginAccount | undefined> {
  return db.selectFrom('users').select(['id', 'role', 'password_hash', 'token_version'])
    .where(sql`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst()
}

/** Whose failure budget a sign-in attempt spends: an account's (its email, any case), or a device token's (its nonce's sha256). */
export type LoginBudget = { account: string } | { device: string }

export type LoginClaim =
  | { claimed: true, budget: LoginBudget, id: number }
  | { claimed: false, clearsInSeconds: number }

/**
 * Claims one sign-in attempt from a failure budget: `failures` per `windowSeconds`. The attempt is
 * recorded as a failure at once, before its password is checked (`clearLoginAttempt` takes it back
 * when the password matched), under a transaction lock of the budget: concurrent attempts count
 * one after the other, so no burst of guesses gets past the budget. Refused, it says in how many
 * seconds the oldest failure stops counting.
 */
export async function claimLoginAttempt (db: Db, budget: LoginBudget, failures: number, windowSeconds: number): Promise<LoginClaim> {
  const key = 'account' in budget ? `account:${budget.account.toLowerCase()}` : `device:${budget.device}`
  const since = sql<Date>`now() - make_interval(secs => ${windowSeconds})`
  const clears = sql<number | null>`extract(epoch from min(failed_at) + make_interval(secs => ${windowSeconds}) - now())`
  return inTransaction(db, async (trx): Promise<LoginClaim> => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`tandem login_failures ${key}`}, 0))`.execute(trx)
    const recent = 'account' in budget
      ? await trx.selectFrom('login_failures').select((eb) => [eb.fn.countAll<number>().as('count'), clears.as('clears')])
        .where('email', '=', budget.account.toLowerCase()).where('failed_at', '>', since).executeTakeFirstOrThrow()
      : await trx.selectFrom('login_failures_by_device').select((eb) => [eb.fn.countAll<number>().as('count'), clears.as('clears')])
        .where('device', '=', budget.device).where('failed_at', '>', since).executeTakeFirstOrThrow()
    if (Number(recent.count) >= failures) return { claimed: false, clearsInSeconds: Math.max(1, Math.ceil(Number(recent.clears ?? 1))) }
    const row = 'account' in budget
      ? await trx.insertInto('login_failures').values({ email: budget.account.toLowerCase() }).returning('id').executeTakeFirstOrThrow()
      : await trx.insertInto('login_failures_by_device').values({ device: budget.device }).returning('id').executeTakeFirstOrThrow()
    return { claimed: true, budget, id: Number(row.id) }
  })
}

/** Takes back the failure a claimed attempt recorded: its password matched. */
export async function clearLoginAttempt (db: Db, claim: { budget: LoginBudget, id: number }): Promise<void> {
  if ('account' in claim.budget) await db.deleteFrom('login_failures').where('id', '=', claim.id).execute()
  else await db.deleteFrom('login_failures_by_device').where('id', '=', claim.id).execute()
}

export type AdminOutcome = 'created' | 'unchanged' | 'password-changed' | 'not-an-admin'

/**
 * Creates the administrator of `email`, or sets the password of the administrator that has it
 * (ending their sessions when it changed). An existing account that is not an administrator is
 * left alone: configuration never promotes a self-registered account.
 */
export async function ensureAdmin (
  db: Db,
  email: string,
  password: { hash: () => Promise<string>, matches: (stored: string | null) => Promise<boolean> },
  tokensExpireBy: Date
): Promise<AdminOutcome> {
  const existing = await db.selectFrom('users').select(['id', 'role', 'password_hash'])
    .where(sql`lower(email)`, '=', email.toLowerCase()).executeTakeFirst()
  if (existing !== undefined && existing.role !== 'admin') return 'not-an-admin'
  if (existing !== undefined && await password.matches(existing.password_hash)) return 'unchanged'
  const passwordHash = await password.hash()
  const outcome = await inTransaction(db, async (trx): Promise<AdminOutcome | 'created elsewhere'> => {
    if (existing !== undefined) {
      await trx.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', existing.id).execute()
      await revokeTokensOf(trx, existing.id, tokensExpireBy)
      return 'password-changed'
    }
    const created = await trx.insertInto('users')
      .values({ name: 'Administrator', email, password_hash: passwordHash, role: 'admin' })
      .onConflict((oc) => oc.expression(sql`lower(email)`).doNothing())
      .returning('id')
      .executeTakeFirst()
    if (created === undefined) return 'created elsewhere'
    await trx.insertInto('profiles').values({ user_id: created.id }).execute()
    return 'created'
  })
  // Several instances starting at once on a new database: one creates the account, the others
  // find it (and their password) on a second look rather than failing on the unique email.
  return outcome === 'created elsewhere' ? ensureAdmin(db, email, password, tokensExpireBy) : outcome
}

export interface Message {
  subject: string
  body: string
}

export interface NewOneTimeToken {
  userId: number
  kind: UserTokenKind
  tokenHash: string
  /** The token, sealed for the mailer; the message's body holds a placeholder. */
  sealedToken: string
  expiresAt: Date
  /** Tokens of this kind the user may be sent per rolling hour. */
  perHour: number
  /** Writes the message a mailer sends, from the user it goes to. */
  compose: (user: { name: string, email: string }) => Message
}

export type OneTimeTokenOutcome =
  | { outcome: 'queued' }
  | { outcome: 'no-such-user' }
  | { outcome: 'too-many', retryAfterSeconds: number }

/**
 * Stores a one-time token's hash and queues its message, in one transaction, unless the user has
 * had `perHour` of the kind in the last hour. The user's row is locked first, so that concurrent
 * requests count one after the other.
 */
export async function createOneTimeToken (db: Db, input: NewOneTimeToken): Promise<OneTimeTokenOutcome> {
  return inTransaction(db, async (trx): Promise<OneTimeTokenOutcome> => {
    const user = await trx.selectFrom('users').select(['name', 'email']).where('id', '=', input.userId).forUpdate().executeTakeFirst()
    if (user === undefined) return { outcome: 'no-such-user' }
    const recent = await trx.selectFrom('user_tokens')
      .select((eb) => [eb.fn.countAll<number>().as('count'), sql<number>`extract(epoch from min(created_at) + interval '1 hour' - now())`.as('wait')])
      .where('user_id', '=', input.userId).where('kind', '=', input.kind)
      .where('created_at', '>', sql<Date>`now() - interval '1 hour'`)
      .executeTakeFirstOrThrow()
    if (Number(recent.count) >= input.perHour) return { outcome: 'too-many', retryAfterSeconds: Math.max(1, Math.ceil(Number(recent.wait))) }
    await trx.insertInto('user_tokens')
      .values({ token_hash: input.tokenHash, user_id: input.userId, kind: input.kind, email: user.email, expires_at: input.expiresAt })
      .execute()
    await trx.insertInto('email_outbox').values({
      user_id: input.userId,
      recipient: user.email,
      kind: input.kind,
      ...input.compose(user),
      sealed_token: input.sealedToken,
      expires_at: input.expiresAt
    }).execute()
    return { outcome: 'queued' }
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

/** Whether a one-time token of that kind is unused and unexpired now (without spending it). */
export async function tokenIsUsable (db: Db, kind: UserTokenKind, tokenHash: string): Promise<boolean> {
  const row = await db.selectFrom('user_tokens').select('user_id')
    .where('token_hash', '=', tokenHash).where('kind', '=', kind)
    .where('used_at', 'is', null).where('expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst()
  return row !== undefined
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
