// The one-time tokens of accounts: who may have one emailed, and what using one does. The account
// itself (sign-up, changes, deletion) is the users' declaration (rules/users.ts).
import type { FastifyInstance } from 'fastify'
import { resetPassword, tokenIsUsable, verifyEmail } from '../db/auth.js'
import type { Db } from '../db/connect.js'
import type { UserTokenKind } from '../db/types.js'
import { hashToken, sendOneTimeToken } from '../plugins/one-time-tokens.js'
import { hashPassword } from '../plugins/passwords.js'
import { badRequest, notFound, tooManyFor } from '../schema/errors.js'

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
