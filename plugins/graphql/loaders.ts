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

/**
 * The relations a GraphQL operation loads in batches: one `Batch` per relation, `limit` and set of
 * columns, so each level of a query is one statement that reads only the columns it shows.
 */
export class RelationLoaders {
  readonly #context: TandemGraphqlContext
  // relation → columns (the same array for every item of a field) → limit → batch
  readonly #batches = new Map<string, Map<readonly string[], Map<number, Batch<unknown>>>>()

  constructor (context: TandemGraphqlContext) {
    this.#context = context
  }

  #batch<V> (relation: string, columns: readonly string[], limit: number, load: LoadMany<V>): Batch<V> {
    let byColumns = this.#batches.get(relation)
    if (byColumns === undefined) this.#batches.set(relation, byColumns = new Map())
    let byLimit = byColumns.get(columns)
    if (byLimit === undefined) byColumns.set(columns, byLimit = new Map())
    let batch = byLimit.get(limit)
    if (batch === undefined) byLimit.set(limit, batch = new Batch(load) as Batch<unknown>)
    return batch as Batch<V>
  }

  get #db () {
    return this.#context.app.db
  }

  async postsOf (authorId: number, limit: number, columns: readonly string[]): Promise<Post[]> {
    const batch = this.#batch('posts of', columns, limit, async (ids) => postsByAuthorIds(this.#db, ids, limit, columns))
    return await batch.load(authorId) ?? []
  }

  async commentsOf (postId: number, limit: number, columns: readonly string[]): Promise<Comment[]> {
    const batch = this.#batch('comments of', columns, limit, async (ids) => commentsByPostIds(this.#db, ids, limit, columns))
    return await batch.load(postId) ?? []
  }

  async user (id: number, columns: readonly string[]): Promise<User | null> {
    return await this.#batch('users', columns, 0, async (ids) => usersByIds(this.#db, ids, columns)).load(id) ?? null
  }

  async post (id: number, columns: readonly string[]): Promise<Post | null> {
    return await this.#batch('posts', columns, 0, async (ids) => findPostsByIds(this.#db, ids, columns)).load(id) ?? null
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
