import { channel } from 'node:diagnostics_channel'
import { hash, verify, type Options } from '@node-rs/argon2'

/**
 * Told of every password hashed (`{}`): the costly step an anonymous caller must not be able to
 * trigger at will. For metrics and tests; nothing about the password is published.
 */
export const passwordHashed = channel('tandem:password-hashed')

// algorithm 2 is argon2id (a const enum upstream, so spelled as its value), with OWASP's recommended parameters (19 MiB, 2 passes, 1 lane).
const options: Options = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 }

// Verified when an email is unknown, so that the answer takes as long as for a wrong password.
const decoy = hash('tandem-decoy-password', options)

export async function hashPassword (password: string): Promise<string> {
  if (passwordHashed.hasSubscribers) passwordHashed.publish({})
  return hash(password, options)
}

/** Constant-time check; `stored` null (an account without a password) never matches. */
export async function verifyPassword (stored: string | null | undefined, password: string): Promise<boolean> {
  if (stored === null || stored === undefined) {
    await verify(await decoy, password).catch(() => false)
    return false
  }
  return verify(stored, password).catch(() => false)
}
