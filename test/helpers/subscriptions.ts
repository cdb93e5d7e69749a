// GraphQL subscriptions from a test's side: a listening server, WebSocket clients, and subscriptions
// whose events can be awaited one by one.
import type { FastifyInstance } from 'fastify'
import Fastify from 'fastify'
import { createClient, type Client } from 'graphql-ws'
import WebSocket from 'ws'
import { serverOptions } from '../../plugins/server-options.js'
import tandem, { type TandemPluginOptions } from '../../app/tandem.js'
import { build, TEST_SECRET, testDb, type AuthHeaders } from './app.js'
import type { Test } from './database.js'

/** A Tandem server listening on a free port: a fresh one (emptied database), or a second instance over the same database. */
export async function listening (t: Test, options: TandemPluginOptions = {}, fresh = true): Promise<{ app: FastifyInstance, url: string }> {
  let app: FastifyInstance
  if (fresh) {
    app = await build(t, options)
  } else {
    // A second instance over the same database, without emptying it.
    app = Fastify(serverOptions({ logLevel: 'silent' }))
    await app.register(tandem, { db: await testDb(), jwtSecret: TEST_SECRET, ...options })
    t.teardown(() => app.close())
  }
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  return { app, url: `ws://127.0.0.1:${port}/graphql` }
}

/** A graphql-ws client of `url`, sending `headers` in `connection_init`; disposed when the test ends. */
export function connect (t: Test, url: string, headers: AuthHeaders | Record<string, string> | undefined): Client {
  const client = createClient({ url, webSocketImpl: WebSocket, retryAttempts: 0, lazy: true, ...(headers === undefined ? {} : { connectionParams: headers }) })
  t.teardown(() => client.dispose())
  return client
}

export interface Subscription<T> {
  /** The next value that `accept` takes (skipping the others), or the subscription's error. */
  next: (accept?: (value: T) => boolean, timeoutMs?: number) => Promise<T>
  /** Every value received so far. */
  received: T[]
  failed: Promise<unknown>
}

/** Subscribes, and keeps every event for `next` to hand out in order. */
export function subscribe<T = Record<string, any>> (client: Client, query: string, variables: Record<string, unknown> = {}): Subscription<T> {
  const received: T[] = []
  const waiters: Array<() => void> = []
  let error: unknown
  let reportFailure: (error: unknown) => void = () => {}
  const failed = new Promise<unknown>((resolve) => { reportFailure = resolve })
  const wake = () => { for (const waiter of waiters.splice(0)) waiter() }
  client.subscribe<T>({ query, variables }, {
    next: (value) => {
      if (value.errors !== undefined) error = value.errors
      else received.push(value.data as T)
      wake()
    },
    error: (e) => { error = e; reportFailure(e); wake() },
    complete: () => wake()
  })
  let cursor = 0
  return {
    received,
    failed,
    async next (accept = () => true, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        while (cursor < received.length) {
          const value = received[cursor++] as T
          if (accept(value)) return value
        }
        if (error !== undefined) throw error instanceof Error ? error : new Error(JSON.stringify(error))
        const left = deadline - Date.now()
        if (left <= 0) throw new Error('no event in time')
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left)
          waiters.push(() => { clearTimeout(timer); resolve() })
        })
      }
    }
  }
}
