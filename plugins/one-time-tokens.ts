import { createHash, randomBytes } from 'node:crypto'
import type { Db } from '../db/connect.js'
import { createOneTimeToken, type Message } from '../db/auth.js'
import type { UserTokenKind } from '../db/types.js'

interface Kind {
  lifetimeMs: number
  compose: (user: { name: string }, token: string, expiresAt: Date) => Message
}

const kinds: Record<UserTokenKind, Kind> = {
  verify_email: {
    lifetimeMs: 24 * 3600_000,
    compose: (user, token, expiresAt) => ({
      subject: 'Confirm your email address',
      body: `Hello ${user.name},\n\nto confirm this email address, send this token to POST /api/v1/auth/verify-email:\n\n${token}\n\nIt can be used once, until ${expiresAt.toISOString()}.\n`
    })
  },
  reset_password: {
    lifetimeMs: 3600_000,
    compose: (user, token, expiresAt) => ({
      subject: 'Set your password',
      body: `Hello ${user.name},\n\nto set a new password, send this token with it to POST /api/v1/auth/reset-password:\n\n${token}\n\nIt can be used once, until ${expiresAt.toISOString()}. If you did not ask for this, ignore this email.\n`
    })
  }
}

/** What the database keeps of a one-time token: its sha256, never the token. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex')

/**
 * Makes a one-time token for the user and queues the email that carries it; false when there is
 * no such user. The token is 256 random bits, so a fast hash is enough to keep it safe at rest.
 */
export async function sendOneTimeToken (db: Db, userId: number, kind: UserTokenKind): Promise<boolean> {
  const token = randomBytes(32).toString('base64url')
  const expiresAt = new Date(Date.now() + kinds[kind].lifetimeMs)
  return createOneTimeToken(db, {
    userId,
    kind,
    tokenHash: hashToken(token),
    expiresAt,
    compose: (user) => kinds[kind].compose(user, token, expiresAt)
  })
}
