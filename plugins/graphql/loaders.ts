import { commentsByPostIds, type Comment } from '../../db/comments.js'
import { findPostsByIds, postsByAuthorIds, usersByIds, type Post } from '../../db/posts.js'
import type { User } from '../../db/users.js'
import type { TandemGraphqlContext } from './context.js'

// What a parent without children gets: one frozen empty list, not one allocated per call.
const NONE: readonly never[] = Object.freeze([])

type LoadMany<V> = (ids: number[]) => Promise<Map<number, V>>

interface Pending<V> {
  promise: Promise<V>
  resolve: (value: V) => void
  reject: (error: unknown) => void
}

/**
 * Collects the ids asked for while graphql-js resolves one level of a query, then loads them all
 * with ONE call, as DataLoader does: the batch is sent on the `nextTick` after the current promise
 * jobs, when every sibling field has asked. Callers asking for the same id share one promise, and an
 * id not found answers `missing`. Nothing is kept after a batch, so a subscription's context, which
 * lives as long as its connection, never answers with old rows.
 */
export class Batch<V, M = undefined> {
  #waiting = new Map<number, Pending<V | M>>()
  readonly #load: LoadMany<V>
  readonly #missing: M

  constructor (load: LoadMany<V>, missing: M) {
    this.#load = load
    this.#missing = missing
  }

  load (id: number): Promise<V | M> {
    let pending = this.#waiting.get(id)
    if (pending === undefined) {
      if (this.#waiting.size === 0) {
        Promise.resolve().then(() => { process.nextTick(() => { this.#dispatch() }) }, () => {})
      }
      let settle!: Pick<Pending<V | M>, 'resolve' | 'reject'>
      const promise = new Promise<V | M>((resolve, reject) => { settle = { resolve, reject } })
      pending = { promise, ...settle }
      this.#waiting.set(id, pending)
    }
    return pending.promise
  }

  #dispatch (): void {
    const waiting = this.#waiting
    this.#waiting = new Map()
    this.#load([...waiting.keys()]).then((found) => {
      for (const [id, pending] of waiting) pending.resolve(found.get(id) ?? this.#missing)
    }, (error: unknown) => {
      for (const pending of waiting.values()) pending.reject(error)
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
  readonly #batches = new Map<string, Map<readonly string[], Map<number, Batch<unknown, unknown>>>>()

  constructor (context: TandemGraphqlContext) {
    this.#context = context
  }

  // `load` is called only for a batch not made yet: a field's items share one, without a closure each.
  #batch<V, M> (relation: string, columns: readonly string[], limit: number, missing: M, load: (columns: readonly string[], limit: number) => LoadMany<V>): Batch<V, M> {
    let byColumns = this.#batches.get(relation)
    if (byColumns === undefined) this.#batches.set(relation, byColumns = new Map())
    let byLimit = byColumns.get(columns)
    if (byLimit === undefined) byColumns.set(columns, byLimit = new Map())
    let batch = byLimit.get(limit)
    if (batch === undefined) byLimit.set(limit, batch = new Batch(load(columns, limit), missing) as Batch<unknown, unknown>)
    return batch as Batch<V, M>
  }

  get #db () {
    return this.#context.app.db
  }

  readonly #postsOf = (columns: readonly string[], limit: number): LoadMany<Post[]> => async (ids) => postsByAuthorIds(this.#db, ids, limit, columns)
  readonly #commentsOf = (columns: readonly string[], limit: number): LoadMany<Comment[]> => async (ids) => commentsByPostIds(this.#db, ids, limit, columns)
  readonly #users = (columns: readonly string[]): LoadMany<User> => async (ids) => usersByIds(this.#db, ids, columns)
  readonly #posts = (columns: readonly string[]): LoadMany<Post> => async (ids) => findPostsByIds(this.#db, ids, columns)

  postsOf (authorId: number, limit: number, columns: readonly string[]): Promise<readonly Post[]> {
    return this.#batch('posts of', columns, limit, NONE, this.#postsOf).load(authorId)
  }

  commentsOf (postId: number, limit: number, columns: readonly string[]): Promise<readonly Comment[]> {
    return this.#batch('comments of', columns, limit, NONE, this.#commentsOf).load(postId)
  }

  user (id: number, columns: readonly string[]): Promise<User | null> {
    return this.#batch('users', columns, 0, null, this.#users).load(id)
  }

  post (id: number, columns: readonly string[]): Promise<Post | null> {
    return this.#batch('posts', columns, 0, null, this.#posts).load(id)
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
