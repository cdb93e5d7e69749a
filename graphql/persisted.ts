import type { PersistedQueryProvider } from 'mercurius'
import type { Db } from '../db/connect.js'
import { findPersistedQuery, learnPersistedQuery, MAX_LEARNT_BYTES, MAX_LEARNT_QUERIES, queryHash, savePersistedQuery, type LearntBudget } from '../db/persisted-queries.js'

/** Bytes a document a client teaches may have: larger ones run, but are not learnt. */
export const MAX_LEARNT_DOCUMENT_BYTES = 16 * 1024

/** Automatic persisted queries, as Apollo clients speak them. */
export const PERSISTED_QUERY_NOT_FOUND = 'PersistedQueryNotFound'
export const PERSISTED_QUERY_NOT_SUPPORTED = 'PersistedQueryNotSupported'

const SHA256_HEX = /^[0-9a-fA-F]{64}$/

interface PersistedQueryExtension { version?: unknown, sha256Hash?: unknown }
interface QueryRequest { query?: unknown, extensions?: { persistedQuery?: PersistedQueryExtension } | null }

const persistedQueryOf = (request: QueryRequest): PersistedQueryExtension | undefined => {
  const extension = request.extensions?.persistedQuery
  return extension !== null && typeof extension === 'object' ? extension : undefined
}

/** A small least-recently-used map. */
class Lru<V> {
  private readonly entries = new Map<string, V>()
  constructor (private readonly size: number) {}
  get (key: string): V | undefined {
    const value = this.entries.get(key)
    if (value !== undefined) {
      this.entries.delete(key)
      this.entries.set(key, value)
    }
    return value
  }

  set (key: string, value: V): void {
    this.entries.delete(key)
    this.entries.set(key, value)
    if (this.entries.size > this.size) this.entries.delete(this.entries.keys().next().value as string)
  }
}

export interface PersistedQueryStoreOptions {
  /** Documents kept in memory in front of PostgreSQL. @example 1000 */
  cacheSize?: number
  /** Documents learnt from clients kept in PostgreSQL at most (registered ones do not count). @example 10000 */
  learntLimit?: number
  /** Bytes those documents may take in all. @example 16777216 */
  learntBytes?: number
}

/**
 * The documents of automatic persisted queries: in PostgreSQL (`persisted_queries`), so every
 * instance knows what any of them learnt, with a small in-process cache in front. Only the
 * hashes that are found are cached; an unknown one is asked again, since another instance may
 * have learnt it meanwhile.
 */
export class PersistedQueryStore {
  private readonly cache: Lru<string>
  private readonly learnt: LearntBudget

  constructor (private readonly db: Db, options: PersistedQueryStoreOptions = {}) {
    this.cache = new Lru(options.cacheSize ?? 1000)
    this.learnt = { count: options.learntLimit ?? MAX_LEARNT_QUERIES, bytes: options.learntBytes ?? MAX_LEARNT_BYTES }
  }

  async find (sha256: string): Promise<string | undefined> {
    const hash = sha256.toLowerCase()
    const cached = this.cache.get(hash)
    if (cached !== undefined) return cached
    const query = await findPersistedQuery(this.db, hash)
    if (query !== undefined) this.cache.set(hash, query)
    return query
  }

  /** Registers a document for good (the application's own, for `graphqlPersistedOnly` say). */
  async save (query: string): Promise<string> {
    const hash = await savePersistedQuery(this.db, query)
    this.cache.set(hash, query)
    return hash
  }

  /**
   * Stores a document a client sent with its hash (and that ran: Mercurius saves only those), up to
   * MAX_LEARNT_DOCUMENT_BYTES: kept while among those used most recently within the budget.
   */
  async learn (query: string): Promise<string> {
    const hash = queryHash(query)
    if (Buffer.byteLength(query, 'utf8') > MAX_LEARNT_DOCUMENT_BYTES) return hash
    if (this.cache.get(hash) === undefined) {
      await learnPersistedQuery(this.db, query, this.learnt)
      this.cache.set(hash, query)
    }
    return hash
  }

  /** Whether this exact document is stored. */
  async has (query: string): Promise<boolean> {
    return await this.find(queryHash(query)) === query
  }

  /**
   * Mercurius's `persistedQueryProvider` for the APQ protocol: a request with
   * `extensions.persistedQuery.sha256Hash` and no query runs the stored document, or answers
   * `PersistedQueryNotFound`; the same with the query runs it and stores it under its hash
   * (unless `learn` is false).
   */
  provider (learn: boolean): PersistedQueryProvider {
    return {
      isPersistedQuery: (request: QueryRequest) => (request.query === undefined || request.query === null || request.query === '') && persistedQueryOf(request) !== undefined,
      isPersistedQueryRetry: (request: QueryRequest) => typeof request.query === 'string' && request.query !== '' && persistedQueryOf(request) !== undefined,
      // A hash that is not version 1 SHA-256 hex → PersistedQueryNotSupported.
      getHash: ((request: QueryRequest) => {
        const extension = persistedQueryOf(request)
        const hash = extension?.sha256Hash
        return extension?.version === 1 && typeof hash === 'string' && SHA256_HEX.test(hash) ? hash.toLowerCase() : false
      }) as PersistedQueryProvider['getHash'],
      getQueryFromHash: async (hash: string) => this.find(hash),
      getHashForQuery: queryHash,
      saveQuery: async (_hash: string, query: string) => { if (learn) await this.learn(query) },
      notFoundError: PERSISTED_QUERY_NOT_FOUND,
      notSupportedError: PERSISTED_QUERY_NOT_SUPPORTED,
      mismatchError: 'provided sha does not match query'
    }
  }
}
