import type { FastifyBaseLogger } from 'fastify'
import { TandemError } from '../schema/errors.js'

/** What is needed of a subscription's WebSocket (a `ws` socket). */
export interface SubscriptionSocket {
  readonly readyState: number
  close: (code: number, reason: string) => void
  once: (event: 'close', listener: () => void) => unknown
}

/** `WebSocket.OPEN` of `ws`. */
const OPEN = 1

/** The close code for a token that no longer passes; graphql-transport-ws's clients do not retry it. */
const UNAUTHORIZED = { code: 4401, reason: 'Unauthorized' } as const

const isUnauthenticated = (error: unknown): boolean =>
  error instanceof TandemError && error.code === 'TANDEM_ERR_UNAUTHENTICATED'

/**
 * The tokens that open subscription sockets were authenticated with. They are checked again
 * periodically, as every request's token is: a socket whose token has expired or been revoked
 * (logout, password reset, deletion of the user) is closed with 4401 rather than streaming on.
 */
export class SubscriptionTokens {
  readonly #verify: (token: string) => Promise<unknown>
  readonly #log: FastifyBaseLogger
  // A socket can hold several tokens: one from `connection_init`, others sent with a subscription.
  readonly #tokens = new Map<SubscriptionSocket, Set<string>>()
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #again = false

  /** `verify` resolves for a valid token and rejects with a 401 TandemError otherwise. */
  constructor (verify: (token: string) => Promise<unknown>, log: FastifyBaseLogger) {
    this.#verify = verify
    this.#log = log
  }

  /** Keeps checking the token until the socket closes. */
  watch (socket: SubscriptionSocket, token: string): void {
    // A socket already closing has emitted, or will emit, the `close` that would forget it.
    if (socket.readyState !== OPEN) return
    let tokens = this.#tokens.get(socket)
    if (tokens === undefined) {
      tokens = new Set()
      this.#tokens.set(socket, tokens)
      socket.once('close', () => { this.#tokens.delete(socket) })
    }
    tokens.add(token)
  }

  /** Checks the tokens every `periodMs` until `stop`. */
  start (periodMs: number): void {
    this.#timer = setInterval(() => { this.check() }, periodMs)
    this.#timer.unref()
  }

  async stop (): Promise<void> {
    clearInterval(this.#timer)
    await this.#running
  }

  /**
   * Closes the sockets holding a token that no longer passes. When a token cannot be checked
   * (PostgreSQL out of reach), the sweep stops there and the next one starts over: an outage
   * closes nobody.
   */
  async sweep (): Promise<void> {
    for (const [socket, tokens] of this.#tokens) {
      for (const token of tokens) {
        if (await this.#passes(token)) continue
        this.#tokens.delete(socket)
        socket.close(UNAUTHORIZED.code, UNAUTHORIZED.reason)
        break
      }
    }
  }

  async #passes (token: string): Promise<boolean> {
    try {
      await this.#verify(token)
      return true
    } catch (error) {
      if (isUnauthenticated(error)) return false
      throw error
    }
  }

  /** Checks the tokens now (after the sweep under way, if any): tokens were revoked, say. */
  check (): void {
    if (this.#running !== undefined) {
      this.#again = true
      return
    }
    if (this.#tokens.size === 0) return
    this.#running = this.sweep()
      .catch((err: unknown) => { this.#log.warn({ err }, 'could not check the tokens of open subscriptions') })
      .finally(() => {
        this.#running = undefined
        if (this.#again) {
          this.#again = false
          this.check()
        }
      })
  }
}
