import type { FastifyBaseLogger } from 'fastify'
import type { Db } from '../db/connect.js'
import { isRevoked, recordTokenLifetime, revocationsSince, revokeToken, userOfRow } from '../db/revoked-tokens.js'

/** How often each instance reads the revocations made by the others. */
export const REFRESH_MS = 1_000
// A poll reads rows a little older than the newest one it has seen, in case a row with an
// earlier `revoked_at` committed after it (revoked_at is set at insert, visibility comes at commit).
const OVERLAP_MS = 5_000
// With no successful poll for this long, the copy is not trusted and the table is asked directly.
const STALE_MS = 5 * REFRESH_MS

/**
 * The access-token denylist. PostgreSQL's `revoked_tokens` is the truth; each instance keeps
 * the unexpired jtis in memory, adds its own revocations at once and reads the others' every
 * `REFRESH_MS`. A request then costs no database round trip; the price is that a token revoked
 * on another instance stays usable there for at most about one second. When polling fails for
 * `STALE_MS`, `has` asks the table itself, so an outage never widens that window.
 */
export class RevocationList {
  readonly #db: Db
  readonly #log: FastifyBaseLogger
  readonly #revoked = new Map<string, number>()
  // user id → every token of theirs below `version` is revoked, until `expires`.
  readonly #cutoffs = new Map<number, { version: number, expires: number }>()
  #newest: Date | undefined
  #lastRefresh = 0
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  readonly #listeners = new Set<() => void>()
  readonly #tokenLifetime: number
  #lifetimeRecorded = false

  /** `tokenLifetime`: this instance's access-token lifetime in seconds, recorded with the first poll that reaches the database. */
  constructor (db: Db, log: FastifyBaseLogger, tokenLifetime: number) {
    this.#db = db
    this.#log = log
    this.#tokenLifetime = tokenLifetime
  }

  /** Loads the current list and starts polling. A database that is down does not stop the start: `has` asks it until it answers. */
  async start (): Promise<void> {
    await this.refresh().catch((err: unknown) => { this.#log.warn({ err }, 'could not load the revoked tokens') })
    this.#timer = setInterval(() => { this.#tick() }, REFRESH_MS)
    this.#timer.unref()
  }

  async close (): Promise<void> {
    clearInterval(this.#timer)
    await this.#running
  }

  /**
   * Whether the token is revoked, by itself or with every earlier token of its user (a password
   * reset): tokens carry their user's token version, so no clock is compared.
   */
  async has (token: { jti: string, sub: number, ver: number }, now = Date.now()): Promise<boolean> {
    if (this.known(token, now)) return true
    if (now - this.#lastRefresh <= STALE_MS) return false
    return isRevoked(this.#db, token.jti, token.sub, token.ver)
  }

  /** Whether this instance's copy says the token is revoked: no I/O, for hot paths that may be a second late. */
  known (token: { jti: string, sub: number, ver: number }, now = Date.now()): boolean {
    const expires = this.#revoked.get(token.jti)
    if (expires !== undefined && expires > now) return true
    const cutoff = this.#cutoffs.get(token.sub)
    return cutoff !== undefined && cutoff.expires > now && token.ver < cutoff.version
  }

  async add (jti: string, expiresAt: Date): Promise<void> {
    await revokeToken(this.#db, jti, expiresAt)
    this.#revoked.set(jti, expiresAt.getTime())
    this.#changed()
  }

  /** Calls `listener` whenever revocations arrive (made here or read from the table). */
  onChange (listener: () => void): void {
    this.#listeners.add(listener)
  }

  #changed (): void {
    for (const listener of this.#listeners) listener()
  }

  /** Reads the revocations made since the last poll and forgets expired ones. */
  async refresh (): Promise<void> {
    const startedAt = Date.now()
    if (!this.#lifetimeRecorded) {
      await recordTokenLifetime(this.#db, this.#tokenLifetime)
      this.#lifetimeRecorded = true
    }
    const since = this.#newest === undefined ? undefined : new Date(this.#newest.getTime() - OVERLAP_MS)
    const rows = await revocationsSince(this.#db, since)
    for (const row of rows) {
      const user = userOfRow(row.jti)
      if (user === undefined) this.#revoked.set(row.jti, row.expires_at.getTime())
      else this.#cutoffs.set(user, { version: row.token_version ?? 0, expires: row.expires_at.getTime() })
      if (this.#newest === undefined || row.revoked_at > this.#newest) this.#newest = row.revoked_at
    }
    for (const [jti, expires] of this.#revoked) if (expires <= startedAt) this.#revoked.delete(jti)
    for (const [user, { expires }] of this.#cutoffs) if (expires <= startedAt) this.#cutoffs.delete(user)
    this.#lastRefresh = startedAt
    if (rows.length > 0) this.#changed()
  }

  #tick (): void {
    if (this.#running !== undefined) return
    this.#running = this.refresh()
      .catch((err: unknown) => { this.#log.warn({ err }, 'could not refresh the revoked tokens') })
      .finally(() => { this.#running = undefined })
  }
}
