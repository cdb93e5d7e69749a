import { hash, verify, type Options } from '@node-rs/argon2'

// algorithm 2 is argon2id (a const enum upstream, so spelled as its value), with OWASP's recommended parameters (19 MiB, 2 passes, 1 lane).
const options: Options = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 }

// Verified when an email is unknown, so that the answer takes as long as for a wrong password.
const decoy = hash('tandem-decoy-password', options)

export async function hashPassword (password: string): Promise<string> {
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
