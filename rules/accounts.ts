// The account rules both styles share: REST routes and GraphQL resolvers call these and only
// translate. What ends a session, what an email change needs, who may send one-time emails.
import type { FastifyInstance } from 'fastify'
import { resetPassword, tokenIsUsable, verifyEmail } from '../db/auth.js'
import type { Db } from '../db/connect.js'
import type { Precondition } from '../db/locked-write.js'
import type { UserTokenKind } from '../db/types.js'
import { createUser, deleteUser, findUser, updateUser, type User, type UserChanges } from '../db/users.js'
import { assertSelfOrAdmin, type AccessUser } from '../plugins/auth.js'
import { hashToken, sendOneTimeToken } from '../plugins/one-time-tokens.js'
import { hashPassword } from '../plugins/passwords.js'
import { badRequest, forbidden, notFound, tooManyFor } from '../schema/errors.js'

/** How long the notice of an email change stays in the outbox. */
const NOTICE_LIFETIME_MS = 7 * 24 * 3600_000

export interface SignUp {
  name: string
  email: string
  password?: string | undefined
}

/** Creates an account (and its profile); its password is stored hashed. */
export async function signUp (db: Db, input: SignUp): Promise<User> {
  const passwordHash = input.password === undefined ? null : await hashPassword(input.password)
  return createUser(db, { name: input.name, email: input.email, passwordHash })
}

export interface AccountChanges extends UserChanges {
  /** Needed when users change their own email. */
  current_password?: string | undefined
}

/**
 * Changes a user, as the user or an administrator. A new email needs the user's current password
 * when they change it themselves (a stolen token alone cannot move the account elsewhere); the old
 * address is told, and the new one is unverified. Undefined when there is no such user.
 */
export async function changeUser (
  app: FastifyInstance, caller: AccessUser, id: number, changes: AccountChanges, check?: Precondition<User>
): Promise<User | undefined> {
  assertSelfOrAdmin(caller, id)
  const { current_password: currentPassword, ...fields } = changes
  if (fields.email !== undefined && caller.sub === id) {
    const current = await findUser(app.db, id)
    if (current?.email !== undefined && current.email.toLowerCase() !== fields.email.toLowerCase()) {
      if (currentPassword === undefined) throw badRequest('changing your email needs your current password', 'current_password')
      // Guesses here and at sign-in share the account's failure budget: a stolen token buys none.
      if (await app.accessTokens.checkPassword(current.email, currentPassword) === undefined) throw forbidden('current_password is wrong')
    }
  }
  return updateUser(app.db, id, fields, {
    check,
    emailChangeNotice: { compose: emailChangedNotice, expiresAt: new Date(Date.now() + NOTICE_LIFETIME_MS) }
  })
}

function emailChangedNotice (before: { name?: string | undefined }, after: { email?: string | undefined }): { subject: string, body: string } {
  return {
    subject: 'Your email address was changed',
    body: `Hello ${before.name ?? ''},\n\nthe email address of your account was changed to ${after.email ?? ''}. Messages now go there.\nIf you did not do this, contact us at once.\n`
  }
}

/** Deletes a user, as the user or an administrator, and ends their sessions on this instance at once (on the others within the second). */
export async function removeUser (app: FastifyInstance, caller: AccessUser, id: number, check?: Precondition<User>): Promise<boolean> {
  assertSelfOrAdmin(caller, id)
  const deleted = await deleteUser(app.db, id, app.accessTokens.newTokensExpireAt(), check)
  if (deleted) await app.accessTokens.refreshRevocations()
  return deleted
}

/** Queues a one-time email (verify the address, set a password) for the user: at most `oneTimeEmailsPerHour` of a kind. */
export async function requestOneTimeToken (app: FastifyInstance, db: Db, userId: number, kind: UserTokenKind): Promise<void> {
  const config = app.tandemConfig
  const sent = await sendOneTimeToken(db, userId, kind, { secret: config.jwtSecret, perHour: config.oneTimeEmailsPerHour })
  if (sent.outcome === 'no-such-user') throw notFound('user')
  if (sent.outcome === 'too-many') throw tooManyFor(sent.retryAfterSeconds)
}

const unusable = () => badRequest('token is invalid, used or expired', 'token')

/** Confirms an email address with its one-time token. */
export async function confirmEmail (db: Db, token: string): Promise<void> {
  if (!await verifyEmail(db, hashToken(token))) throw unusable()
}

/**
 * Sets a new password with a one-time token, and ends every session the user had. The token is
 * checked before the password is hashed: a guess costs the server no hashing.
 */
export async function setPasswordWithToken (app: FastifyInstance, token: string, password: string): Promise<void> {
  const tokenHash = hashToken(token)
  if (!await tokenIsUsable(app.db, 'reset_password', tokenHash)) throw unusable()
  if (!await resetPassword(app.db, tokenHash, await hashPassword(password), app.accessTokens.newTokensExpireAt())) throw unusable()
  await app.accessTokens.refreshRevocations()
}
