import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { GraphQLError } from 'graphql'
import { bearerOfPayload } from './context.js'
import { clientError, codes } from './errors.js'

/** What the gate needs of a subscription's WebSocket (a `ws` socket). */
export interface GatedSocket {
  readonly protocol: string
  emit: (event: string | symbol, ...args: unknown[]) => boolean
  send: (data: string, callback?: (error?: Error) => void) => void
  close: (code?: number, reason?: string) => void
  once: (event: 'close', listener: () => void) => unknown
}

export interface SocketGateOptions {
  /** Milliseconds a new connection has to send `connection_init`. @example 10_000 */
  initTimeoutMs: number
  /** Subscriptions one connection may hold at once. @example 50 */
  maxSubscriptions: number
  /**
   * The refusal of a `subscribe` Mercurius should not see (a document it should not parse,
   * variables graphql-js should not coerce), or undefined.
   */
  checkRequest: (request: SubscribeRequest) => readonly GraphQLError[] | undefined
  /**
   * Counts a subscription against its caller's rate limit: `token` is the one of `connection_init`.
   * Resolves to the seconds to wait when over, else undefined.
   */
  limitCall: (connection: FastifyRequest, token: string | undefined) => Promise<number | undefined>
  log: FastifyBaseLogger
}

/** What a `subscribe` message asks for (its `payload`): the document is GraphQL text. */
export interface SubscribeRequest { query: string, variables?: unknown, operationName?: unknown }

/** graphql-transport-ws closes a connection not initialised in time with this code. */
const INIT_TIMEOUT = { code: 4408, reason: 'Connection initialisation timeout' } as const

interface ClientMessage { type?: unknown, id?: unknown, payload?: unknown }

const readMessage = (data: unknown): ClientMessage | undefined => {
  try {
    const message: unknown = JSON.parse(String(data))
    return message !== null && typeof message === 'object' ? message as ClientMessage : undefined
  } catch {
    return undefined
  }
}

const requestOf = (payload: unknown): SubscribeRequest | undefined =>
  payload !== null && typeof payload === 'object' && typeof (payload as { query?: unknown }).query === 'string' ? payload as SubscribeRequest : undefined

/** `subscribe` / `complete` of graphql-transport-ws, `start` / `stop` of the legacy graphql-ws. */
const isSubscribe = (type: unknown) => type === 'subscribe' || type === 'start'
const isEnd = (type: unknown) => type === 'complete' || type === 'stop'
/** The server's messages that end a subscription, as Mercurius writes them. */
const ENDS = ['{"type":"complete"', '{"type":"error"']

/**
 * Looks at what a client sends on a subscription socket before Mercurius does, which parses a
 * `subscribe` document without limits (and has graphql-js coerce its variables), keeps no count
 * of subscriptions and never times out `connection_init`: closes a connection not initialised in time (4408), and answers with an
 * `error` message, without passing it on, a `subscribe` whose document is too large or whose
 * variables do not fit their types, one past the connection's subscriptions, and one over its
 * caller's rate limit. Messages reach Mercurius in the order they came.
 */
export class SocketGate {
  readonly #options: SocketGateOptions
  #open = 0

  constructor (options: SocketGateOptions) {
    this.#options = options
  }

  /** Subscriptions open on every connection this gate watches. */
  get open (): number {
    return this.#open
  }

  /** Wraps a `wsHandler` (Mercurius's): the socket is watched before the handler sees it. */
  wrap<H extends (socket: GatedSocket, request: FastifyRequest) => unknown>(handler: H): H {
    const gate = this
    return function (this: unknown, socket: GatedSocket, request: FastifyRequest) {
      gate.#watch(socket, request)
      return handler.call(this, socket, request)
    } as H
  }

  #watch (socket: GatedSocket, connection: FastifyRequest): void {
    const options = this.#options
    const active = new Set<string>()
    let token: string | undefined
    let closed = false
    const timer = setTimeout(() => { socket.close(INIT_TIMEOUT.code, INIT_TIMEOUT.reason) }, options.initTimeoutMs)
    socket.once('close', () => {
      closed = true
      clearTimeout(timer)
      this.#open -= active.size
      active.clear()
    })
    const start = (id: string) => {
      // A message checked after the socket closed opens nothing.
      if (closed) return
      active.add(id)
      this.#open++
    }
    const end = (id: string) => {
      if (active.delete(id)) this.#open--
    }

    const refuse = (id: string, errors: readonly GraphQLError[]) => {
      socket.send(JSON.stringify({ type: 'error', id, payload: errors.map((error) => ({ message: error.message, extensions: error.extensions })) }))
    }
    // Resolves to whether Mercurius may see the message.
    const admit = async (message: ClientMessage): Promise<boolean> => {
      if (message.type === 'connection_init') {
        clearTimeout(timer)
        token = bearerOfPayload(message.payload)
        return true
      }
      if (typeof message.id !== 'string') return true
      if (isEnd(message.type)) {
        end(message.id)
        return true
      }
      if (!isSubscribe(message.type)) return true
      // Every subscribe, even one reusing an open subscription's id (which Mercurius runs too).
      const request = requestOf(message.payload)
      let refusal: readonly GraphQLError[] | undefined
      try {
        refusal = request === undefined ? undefined : options.checkRequest(request)
      } catch (err) {
        // Fails closed: what could not be checked is not passed on.
        options.log.error({ err }, 'graphql: could not check a subscribe message')
        refusal = [clientError('the subscription could not be checked', codes.internal)]
      }
      if (refusal !== undefined) {
        refuse(message.id, refusal)
        return false
      }
      if (active.has(message.id)) return true
      if (active.size >= options.maxSubscriptions) {
        refuse(message.id, [clientError(`a connection may hold at most ${options.maxSubscriptions} subscriptions`, codes.tooManySubscriptions, { maximum: options.maxSubscriptions })])
        return false
      }
      const wait = await options.limitCall(connection, token)
      if (wait !== undefined) {
        refuse(message.id, [clientError(`rate limit exceeded, retry in ${wait} seconds`, codes.rateLimited)])
        return false
      }
      start(message.id)
      return true
    }

    // Mercurius reads messages through `events.on(socket, 'message')`: a message is held back by
    // not emitting it, and the checks, some of them asynchronous, run one message at a time.
    const emit = socket.emit.bind(socket)
    let queue = Promise.resolve()
    socket.emit = (event, ...args) => {
      if (event !== 'message') return emit(event, ...args)
      queue = queue.then(async () => {
        const message = readMessage(args[0])
        const admitted = message === undefined || await admit(message).catch((err: unknown) => {
          options.log.warn({ err }, 'graphql: could not check a subscription message')
          return true
        })
        if (admitted) emit(event, ...args)
      })
      return true
    }
    // A subscription the server ended (an error, its end) no longer counts.
    const send = socket.send.bind(socket)
    socket.send = (data, callback) => {
      if (typeof data === 'string' && ENDS.some((start) => data.startsWith(start))) {
        const id = readMessage(data)?.id
        if (typeof id === 'string') end(id)
      }
      send(data, callback)
    }
  }
}
