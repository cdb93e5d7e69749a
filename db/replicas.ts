// Reads on streaming replicas (CONTRACT §13): which server a read goes to, in one place. A read
// goes to a replica that is up and close enough behind the primary; a caller who wrote reads a
// replica only once it has replayed that caller's last commit; anything else goes to the primary.
// Without replicas, `reading` is one WeakMap lookup and the read itself.
import { CompiledQuery } from 'kysely'
import type { Redis } from 'ioredis'
import { ownRows, readRows, replicaServer, type ConnectOptions, type Db } from './connect.js'

export interface ReplicaOptions extends Pick<ConnectOptions, 'poolSize' | 'statementTimeoutMillis' | 'preparedStatements'> {
  /** The replicas' URLs. */
  urls: readonly string[]
  /** A replica further behind than this serves no read of a caller who has not written lately. */
  maxLagMillis: number
  /** How long a read waits for a new connection to a replica before it goes to the primary. */
  connectTimeoutMillis: number
  /** Where the WAL position of each caller's last write is kept: Redis (every instance sees it), else this process. */
  redisUrl?: string | undefined
  /** Told when Redis fails (a read then goes to the primary). */
  warn?: ((error: unknown, message: string) => void) | undefined
}

/** What a replica (or the primary) has served and how it stands, for `/ready` and `/metrics`. */
export interface PoolReport {
  /** `primary`, or `replica 1`, `replica 2`… in the order of the URLs (never their hosts or credentials). */
  pool: string
  /** `up`; for a replica also `lagging` (further behind than the maximum), `down` (failed; tried again after a back-off) or `unknown` (not polled yet). */
  state: 'up' | 'lagging' | 'down' | 'unknown'
  /** Reads served since start. */
  reads: number
  /** How far behind the primary the replica was at its last poll, in seconds (a replica's only; null when not known). */
  lagSeconds?: number | null
}

// The WAL position as a number of bytes: exact up to 2^53 (8 PiB of WAL). Where the next record will
// be inserted, not where WAL has been written to: with `synchronous_commit = off` a commit that has
// returned may not be written yet, and a replica at the written position could lack it.
const PRIMARY_POSITION = CompiledQuery.raw("select pg_current_wal_insert_lsn() - '0/0'::pg_lsn as lsn") as CompiledQuery<{ lsn: number }>
const REPLAYED = CompiledQuery.raw("select pg_is_in_recovery() as standby, pg_last_wal_replay_lsn() - '0/0'::pg_lsn as replayed") as CompiledQuery<{ standby: boolean, replayed: number | null }>
const FIRST_BACKOFF_MILLIS = 1_000
const LAST_BACKOFF_MILLIS = 30_000

/** Where each caller's last commit is kept, as a WAL position: the highest one written wins. */
interface WritePositions {
  get: (user: number) => Promise<number | undefined>
  set: (user: number, lsn: number) => Promise<void>
  close: () => Promise<void>
}

/** In this process: enough with one instance. Entries go after `ttlMillis`. */
function localPositions (ttlMillis: number): WritePositions {
  const positions = new Map<number, { lsn: number, until: number }>()
  let swept = Date.now()
  return {
    get: async (user) => {
      const entry = positions.get(user)
      return entry === undefined || entry.until < Date.now() ? undefined : entry.lsn
    },
    set: async (user, lsn) => {
      const now = Date.now()
      if (now - swept > ttlMillis) {
        for (const [key, { until }] of positions) if (until < now) positions.delete(key)
        swept = now
      }
      const known = positions.get(user)
      positions.set(user, { lsn: Math.max(lsn, known !== undefined && known.until >= now ? known.lsn : 0), until: now + ttlMillis })
    },
    close: async () => {}
  }
}

/**
 * In Redis, where every instance reads it: one sorted set per user whose one member's score is the
 * position (`ZADD GT` keeps the highest when two instances write for one user at once).
 */
async function redisPositions (url: string, ttlMillis: number, warn: ReplicaOptions['warn']): Promise<WritePositions> {
  const { Redis } = await import('ioredis')
  // No offline queue: while Redis is away a lookup fails at once and the read goes to the primary.
  const redis: Redis = new Redis(url, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1, connectTimeout: 5_000 })
  redis.on('error', (error: Error) => { warn?.(error, 'read replicas: redis error') })
  await redis.connect()
  const key = (user: number): string => `tandem:wal:${user}`
  return {
    get: async (user) => {
      const score = await redis.zscore(key(user), 'w')
      return score === null ? undefined : Number(score)
    },
    set: async (user, lsn) => {
      const results = await redis.multi().zadd(key(user), 'GT', lsn, 'w').pexpire(key(user), ttlMillis).exec()
      const failed = results?.find(([error]) => error !== null)?.[0]
      if (failed !== undefined && failed !== null) throw failed
    },
    close: async () => { await redis.quit().catch(() => { redis.disconnect() }) }
  }
}

interface Replica {
  name: string
  db: Db
  state: PoolReport['state']
  /** The WAL position it had replayed at its last poll; Infinity for a server that is not a standby. */
  replayed: number
  lagMillis: number | undefined
  reads: number
  /** When a down replica is tried again. */
  retryAt: number
  backoffMillis: number
}

/** A poll of the primary: where its WAL stood, and when. */
interface Sample { at: number, lsn: number }

/**
 * The replicas of one primary: their pools, their state polled in the background (each replica's
 * replayed position and how long ago the primary was there), and the WAL position of each caller's
 * last write.
 */
export class ReadRouter {
  readonly replicas: Replica[]
  primaryReads = 0
  readonly #primary: Db
  readonly #maxLagMillis: number
  readonly #pollMillis: number
  readonly #positions: WritePositions
  readonly #warn: ReplicaOptions['warn']
  #samples: Sample[] = []
  #next = 0
  #timer: NodeJS.Timeout | undefined
  #polling: Promise<void> | undefined
  #closed = false

  constructor (primary: Db, options: ReplicaOptions, positions: WritePositions) {
    this.#primary = primary
    this.#maxLagMillis = options.maxLagMillis
    // Often enough that a lag is seen within a tenth of the maximum, never more than once per 50 ms.
    this.#pollMillis = Math.min(1_000, Math.max(50, Math.floor(options.maxLagMillis / 10)))
    this.#positions = positions
    this.#warn = options.warn
    this.replicas = options.urls.map((url, at) => {
      const replica: Replica = { name: `replica ${at + 1}`, db: undefined as unknown as Db, state: 'unknown', replayed: 0, lagMillis: undefined, reads: 0, retryAt: 0, backoffMillis: FIRST_BACKOFF_MILLIS }
      replica.db = replicaServer(url.trim(), { ...options, connectTimeoutMillis: options.connectTimeoutMillis }, {
        primary,
        usable: () => replica.state !== 'down',
        failed: (error) => { this.#failed(replica, error) }
      })
      return replica
    })
  }

  /** Polls now, then every poll interval until closed. */
  start (): void {
    const tick = (): void => {
      this.#polling = this.poll().finally(() => {
        this.#polling = undefined
        if (!this.#closed) this.#timer = setTimeout(tick, this.#pollMillis).unref()
      })
    }
    tick()
  }

  async close (): Promise<void> {
    this.#closed = true
    clearTimeout(this.#timer)
    await this.#polling
    await Promise.all(this.replicas.map(async ({ db }) => { await db.destroy() }))
    await this.#positions.close()
  }

  /** Runs `read` on the server `user` may read from (a replica, or the primary). */
  async read<T> (user: number | undefined, read: (db: Db) => Promise<T>): Promise<T> {
    const replica = await this.#pick(user)
    if (replica === undefined) {
      this.primaryReads++
      return await read(this.#primary)
    }
    replica.reads++
    return await read(replica.db)
  }

  /** Keeps the primary's WAL position after `user`'s write has committed: their reads see it. */
  async wrote (user: number): Promise<void> {
    const [position] = await readRows(this.#primary, PRIMARY_POSITION)
    if (position !== undefined) await this.#positions.set(user, Number(position.lsn))
  }

  report (): PoolReport[] {
    return [
      { pool: 'primary', state: 'up', reads: this.primaryReads },
      ...this.replicas.map(({ name, state, reads, lagMillis }) => ({ pool: name, state, reads, lagSeconds: lagMillis === undefined ? null : lagMillis / 1000 }))
    ]
  }

  /** One poll: the primary's position, then each replica's (a down one only once its back-off is over). */
  async poll (): Promise<void> {
    const now = Date.now()
    try {
      const [position] = await readRows(this.#primary, PRIMARY_POSITION)
      if (position !== undefined) this.#samples.push({ at: now, lsn: Number(position.lsn) })
    } catch {}
    // The samples that can still tell a lag up to the maximum, and one older.
    const keepFrom = this.#samples.findLastIndex(({ at }) => at < now - this.#maxLagMillis - 2 * this.#pollMillis)
    if (keepFrom > 0) this.#samples = this.#samples.slice(keepFrom)
    await Promise.all(this.replicas.map(async (replica) => {
      if (replica.state === 'down' && Date.now() < replica.retryAt) return
      try {
        // On the replica's own pool (readRows on its handle would go to the primary while it is down).
        const [row] = await ownRows(replica.db, REPLAYED)
        replica.replayed = row === undefined || !row.standby || row.replayed === null ? Infinity : Number(row.replayed)
        replica.lagMillis = this.#lagOf(replica.replayed, now)
        replica.state = replica.lagMillis <= this.#maxLagMillis ? 'up' : 'lagging'
        replica.backoffMillis = FIRST_BACKOFF_MILLIS
      } catch (error) {
        this.#failed(replica, error)
      }
    }))
  }

  /**
   * How far behind the primary a replica that replayed `replayed` is: 0 when it has the primary's
   * last polled position, else how long ago the primary last stood where the replica stands.
   */
  #lagOf (replayed: number, now: number): number {
    const last = this.#samples.at(-1)
    if (last === undefined || replayed >= last.lsn) return 0
    const caughtUp = this.#samples.findLast(({ lsn }) => lsn <= replayed)
    // Further behind than the samples reach: at least as far as the oldest.
    return now - (caughtUp?.at ?? (this.#samples[0]?.at ?? now) - this.#pollMillis)
  }

  #failed (replica: Replica, error: unknown): void {
    // A read cancelled for a conflict with the replay: that read only.
    if ((error as { code?: unknown } | null)?.code === '40001') return
    if (replica.state !== 'down') replica.backoffMillis = FIRST_BACKOFF_MILLIS
    else replica.backoffMillis = Math.min(LAST_BACKOFF_MILLIS, replica.backoffMillis * 2)
    replica.state = 'down'
    replica.retryAt = Date.now() + replica.backoffMillis
  }

  /** A replica `user` may read from (in turn among those that may serve), or undefined for the primary. */
  async #pick (user: number | undefined): Promise<Replica | undefined> {
    let eligible = this.replicas.filter(({ state }) => state === 'up')
    if (eligible.length === 0) return undefined
    if (user !== undefined) {
      let wrote: number | undefined
      try {
        wrote = await this.#positions.get(user)
      } catch (error) {
        // Not knowing where the caller's last write is, only the primary is sure to have it.
        this.#warn?.(error, 'read replicas: the position of a caller\'s last write could not be read; reading from the primary')
        return undefined
      }
      if (wrote !== undefined) eligible = eligible.filter(({ replayed }) => replayed >= wrote)
      if (eligible.length === 0) return undefined
    }
    this.#next = (this.#next + 1) % eligible.length
    return eligible[this.#next]
  }
}

const routers = new WeakMap<Db, ReadRouter>()

/**
 * Opens the replicas of `primary` and starts polling them; reads through `reading(primary, …)` then
 * go to them. Close the router before the primary.
 */
export async function openReplicas (primary: Db, options: ReplicaOptions): Promise<ReadRouter> {
  // Long enough that a caller's position is never dropped while a replica within the maximum lag may still lack their write.
  const ttlMillis = 2 * options.maxLagMillis + 10_000
  const positions = options.redisUrl === undefined ? localPositions(ttlMillis) : await redisPositions(options.redisUrl, ttlMillis, options.warn)
  const router = new ReadRouter(primary, options, positions)
  routers.set(primary, router)
  router.start()
  return router
}

/** The replicas of `primary`, when it has any. */
export const readRouterOf = (primary: Db): ReadRouter | undefined => routers.get(primary)

/**
 * Runs `read`, a read that is not part of a write, on a replica when `db` has replicas and one may
 * serve `user` (the signed-in caller, or undefined), else on `db`. `read` must not write or open a
 * transaction: it may run on a replica, and a statement the replica fails for its own fault runs
 * again on the primary.
 */
export function reading<T> (db: Db, user: number | undefined, read: (db: Db) => Promise<T>): Promise<T> {
  const router = routers.get(db)
  return router === undefined ? read(db) : router.read(user, read)
}

/** After `user`'s write has committed: their next reads, on any instance, see it. Nothing without replicas. */
export function afterWrite (db: Db, user: number): Promise<void> | undefined {
  return routers.get(db)?.wrote(user)
}
