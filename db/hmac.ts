import { createHmac, hash } from 'node:crypto'

const BLOCK = 64
const DIGEST = 32
// Longer messages (no cursor is) are signed by `createHmac`, to the same result.
const MAX_MESSAGE_BYTES = 1024

/**
 * HMAC-SHA256 (RFC 2104) of one secret, built from two one-shot `hash` calls over buffers that
 * already hold the padded key. `createHmac` builds an OpenSSL context and a handle-tracked object
 * for every signature, which costs more, and more again under load, where the collector has those
 * objects to trace. Every served list page signs a cursor, and a cursor page verifies one (see
 * PERFORMANCE-DECISIONS.md, 'Cursor signatures from two one-shot hashes').
 */
class Hmac {
  private readonly inner = Buffer.alloc(BLOCK + MAX_MESSAGE_BYTES)
  private readonly outer = Buffer.alloc(BLOCK + DIGEST)

  constructor (private readonly secret: Buffer) {
    const key = Buffer.alloc(BLOCK)
    if (secret.length > BLOCK) key.set(Buffer.from(hash('sha256', secret, 'binary'), 'latin1'))
    else key.set(secret)
    for (let at = 0; at < BLOCK; at++) {
      this.inner[at] = (key[at] as number) ^ 0x36
      this.outer[at] = (key[at] as number) ^ 0x5c
    }
  }

  /** The MAC of the message's UTF-8 bytes, in base64url. */
  base64url (message: string): string {
    if (message.length * 3 > MAX_MESSAGE_BYTES) return createHmac('sha256', this.secret).update(message).digest('base64url')
    const length = this.inner.write(message, BLOCK, 'utf8')
    // A digest as 'binary' (latin1) text is its bytes one character each, and is written back as those bytes.
    this.outer.write(hash('sha256', this.inner.subarray(0, BLOCK + length), 'binary'), BLOCK, 'latin1')
    return hash('sha256', this.outer, 'base64url')
  }
}

const signers = new Map<string, Hmac>()

/** HMAC-SHA256 of `message` (UTF-8) under `secret` (UTF-8), in base64url without padding. */
export function hmacBase64url (secret: string, message: string): string {
  let signer = signers.get(secret)
  if (signer === undefined) {
    if (signers.size >= 16) signers.clear()
    signers.set(secret, signer = new Hmac(Buffer.from(secret)))
  }
  return signer.base64url(message)
}
