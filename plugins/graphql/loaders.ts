import { commentsByPostIds, type Comment } from '../../db/comments.js'
import { findPostsByIds, postsByAuthorIds, usersByIds, type Post } from '../../db/posts.js'
import type { User } from '../../db/users.js'
import type { TandemGraphqlContext } from './context.js'

type LoadMany<V> = (ids: number[]) => Promise<Map<number, V>>

/**
 * Collects the ids asked for while graphql-js resolves one level of a query, then loads them all
 * with ONE call, as DataLoader does: the batch is sent on the `nextTick` after the current promise
 * jobs, when every sibling field has asked. Nothing is kept after a batch, so a subscription's
 * context, which lives as long as its connection, never answers with old rows.
 */
export class Batch<V> {
  #waiting = new Map<number, Array<{ resolve: (value: V | undefined) => void, reject: (error: unknown) => void }>>()
  readonly #load: LoadMany<V>

  constructor (load: LoadMany<V>) {
    this.#load = load
  }

  load (id: number): Promise<V | undefined> {
    if (this.#waiting.size === 0) {
      Promise.resolve().then(() => { process.nextTick(() => { this.#dispatch() }) }, () => {})
    }
    return new Promise((resolve, reject) => {
      const waiters = this.#waiting.get(id)
      if (waiters === undefined) this.#waiting.set(id, [{ resolve, reject }])
      else waiters.push({ resolve, reject })
    })
  }

  #dispatch (): void {
    const waiting = this.#waiting
    this.#waiting = new Map()
    this.#load([...waiting.keys()]).then((found) => {
      for (const [id, waiters] of waiting) for (const waiter of waiters) waiter.resolve(found.get(id))
    }, (error: unknown) => {
      for (const waiters of waiting.values()) for (const waiter of waiters) waiter.reject(error)
    })
  }
}

/** The relations a GraphQL operation loads in batches, one `Batch` per relation (and per `limit`). */
export class RelationLoaders {
  readonly #context: TandemGraphqlContext
  readonly #batches = new Map<string, Batch<unknown>>()

  constructor (context: TandemGraphqlContext) {
    this.#context = context
  }

  #batch<V> (key: string, load: LoadMany<V>): Batch<V> {
    let batch = this.#batches.get(key) as Batch<V> | undefined
    if (batch === undefined) {
      batch = new Batch(load)
      this.#batches.set(key, batch as Batch<unknown>)
    }
    return batch
  }

  get #db () {
    return this.#context.app.db
  }

  async postsOf (authorId: number, limit: number): Promise<Post[]> {
    const batch = this.#batch(`posts:${limit}`, async (ids) => postsByAuthorIds(this.#db, ids, limit))
    return await batch.load(authorId) ?? []
  }

  async commentsOf (postId: number, limit: number): Promise<Comment[]> {
    const batch = this.#batch(`comments:${limit}`, async (ids) => commentsByPostIds(this.#db, ids, limit))
    return await batch.load(postId) ?? []
  }

  async user (id: number): Promise<User | null> {
    return await this.#batch('users', async (ids) => usersByIds(this.#db, ids)).load(id) ?? null
  }

  async post (id: number): Promise<Post | null> {
    return await this.#batch('posts', async (ids) => findPostsByIds(this.#db, ids)).load(id) ?? null
  }
}

const perContext = new WeakMap<object, RelationLoaders>()

/** The loaders of this operation (or subscription), made on first use. */
export function relationLoaders (context: TandemGraphqlContext): RelationLoaders {
  let loaders = perContext.get(context)
  if (loaders === undefined) {
    loaders = new RelationLoaders(context)
    perContext.set(context, loaders)
  }
  return loaders
}
