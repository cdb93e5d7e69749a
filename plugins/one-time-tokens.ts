import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto'
import type { Db } from '../db/connect.js'
import { createOneTimeToken, type Message, type OneTimeTokenOutcome } from '../db/auth.js'
import type { UserTokenKind } from '../db/types.js'

/** Where a message's body holds its one-time token; the outbox keeps the token sealed beside it. */
export const TOKEN_PLACEHOLDER = '{{token}}'

interface Kind {
  lifetimeMs: number
  compose: (user: { name: string }, expiresAt: Date) => Message
}

const kinds: Record<UserTokenKind, Kind> = {
  verify_email: {
    lifetimeMs: 24 * 3600_000,
    compose: (user, expiresAt) => ({
      subject: 'Confirm your email address',
      body: `Hello ${user.name},\n\nto confirm this email address, send this token to POST /api/v1/auth/verify-email:\n\n${TOKEN_PLACEHOLDER}\n\nIt can be used once, until ${expiresAt.toISOString()}.\n`
    })
  },
  reset_password: {
    lifetimeMs: 3600_000,
    compose: (user, expiresAt) => ({
      subject: 'Set your password',
      body: `Hello ${user.name},\n\nto set a new password, send this token with it to POST /api/v1/auth/reset-password:\n\n${TOKEN_PLACEHOLDER}\n\nIt can be used once, until ${expiresAt.toISOString()}. If you did not ask for this, ignore this email.\n`
    })
  }
}

/** What the database keeps of a one-time token: its sha256, never the token. */
export const hashToken = (token: string): string => createHash('sha256').update(token).digest('hex')

// The outbox's key is derived from the signing secret, so that a copy of the database alone
// (a backup, a read replica) holds no usable token, and a mailer needs no second secret.
const outboxKey = (secret: string): Buffer => Buffer.from(hkdfSync('sha256', secret, '', 'tandem email outbox', 32))

function seal (secret: string, token: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', outboxKey(secret), iv)
  const sealed = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()])
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64url')
}

function unseal (secret: string, sealed: string): string {
  const bytes = Buffer.from(sealed, 'base64url')
  const decipher = createDecipheriv('aes-256-gcm', outboxKey(secret), bytes.subarray(0, 12))
  decipher.setAuthTag(bytes.subarray(12, 28))
  return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]).toString('utf8')
}

/**
 * The text a mailer sends for an `email_outbox` row: its body, with the one-time token unsealed
 * into it. `secret` is the API's `jwtSecret`; a row sealed with another secret throws.
 */
export function openOutboxMessage (row: { body: string, sealed_token: string | null }, secret: string): string {
  return row.sealed_token === null ? row.body : row.body.replace(TOKEN_PLACEHOLDER, unseal(secret, row.sealed_token))
}

export interface OneTimeTokenSettings {
  /** Signs tokens and seals them in the outbox (`jwtSecret`). */
  secret: string
  /** Messages of one kind a user may be sent per hour. */
  perHour: number
}

/**
 * Makes a one-time token for the user and queues the email that carries it, sealed. The token is
 * 256 random bits, so a fast hash is enough to keep it safe at rest.
 */
export async function sendOneTimeToken (db: Db, userId: number, kind: UserTokenKind, settings: OneTimeTokenSettings): Promise<OneTimeTokenOutcome> {
  const token = randomBytes(32).toString('base64url')
  const expiresAt = new Date(Date.now() + kinds[kind].lifetimeMs)
  return createOneTimeToken(db, {
    userId,
    kind,
    tokenHash: hashToken(token),
    sealedToken: seal(settings.secret, token),
    expiresAt,
    perHour: settings.perHour,
    compose: (user) => kinds[kind].compose(user, expiresAt)
  })
}
