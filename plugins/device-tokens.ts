// Device tokens (OWASP, "Slow Down Online Guessing Attacks with Device Cookies"): a successful
// sign-in gives its client a token naming the account, which it sends with its next sign-in. A
// client that presents a valid one is known to have signed in to that account before, so failures
// from elsewhere (the per-account limit) do not keep it out; its own failures count against the
// token instead. The token proves nothing about the password: it only relaxes that one limit.
import { createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto'
import { hmacBase64url } from '../db/hmac.js'

/** A token this long is no token of ours: it is not even looked at. */
const MAX_LENGTH = 128
// `<user id>.<expiry, seconds since the epoch>.<nonce>.<mac>`: 128 random bits, HMAC-SHA256.
const SHAPE = /^([1-9]\d{0,15})\.(\d{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/

export interface DeviceTokens {
  /** A new device token for the user, valid for the configured lifetime. */
  issue: (userId: number) => string
  /**
   * What the database keeps of `token` (the sha256 of its nonce), when it is a device token of this
   * server for `userId` and has not expired; else undefined (forged, altered, another account's,
   * expired or not one at all: the client is unknown).
   */
  check: (token: string, userId: number) => string | undefined
}

/**
 * Device tokens signed under a key derived from `secret` (`jwtSecret`), so that a copy of the
 * database alone, which keeps only the sha256 of a token's nonce, makes none. `now` is for tests.
 */
export function deviceTokens (secret: string, lifetimeSeconds: number, now: () => number = Date.now): DeviceTokens {
  const key = Buffer.from(hkdfSync('sha256', secret, '', 'tandem device tokens', 32)).toString('base64url')
  const mac = (message: string): string => hmacBase64url(key, message)
  return {
    issue (userId) {
      const message = `${userId}.${Math.floor(now() / 1000) + lifetimeSeconds}.${randomBytes(16).toString('base64url')}`
      return `${message}.${mac(message)}`
    },
    check (token, userId) {
      if (token.length > MAX_LENGTH) return undefined
      const [, user, expires, nonce, given] = SHAPE.exec(token) ?? []
      if (user === undefined || expires === undefined || nonce === undefined || given === undefined) return undefined
      const expected = Buffer.from(mac(`${user}.${expires}.${nonce}`))
      if (!timingSafeEqual(expected, Buffer.from(given)) || Number(user) !== userId || Number(expires) * 1000 <= now()) return undefined
      return createHash('sha256').update(nonce).digest('hex')
    }
  }
}
