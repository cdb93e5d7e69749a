import type { SeedCounts } from '../db/seed.js'

export interface Settings {
  mode: 'full' | 'quick'
  /** The database the data set lives in, on whichever server the run uses; kept between runs. */
  database: string
  /** Rows seeded with db/seed.ts (no orders: the write cases make their own). */
  counts: SeedCounts
  /** Products made for the write cases, each with `benchStock` units, so that they never run out. */
  benchProducts: number
  benchStock: number
  /** `offset=` of the deep OFFSET case: 90 % into the users. */
  deepOffset: number
  connections: number
  /** Seconds of each measured run, and of the warm-up before it (same load, not recorded). */
  seconds: number
  warmupSeconds: number
  /**
   * Times the whole list of cases is run; each case reports its median pass. On a machine shared
   * with other work, a disturbance then spoils one pass of a case rather than the case.
   */
  passes: number
}

export const FULL: Settings = {
  mode: 'full',
  database: 'tandem_bench',
  counts: { users: 100_000, posts: 500_000, comments: 1_000_000, products: 10_000, orders: 0 },
  benchProducts: 1_000,
  benchStock: 1_000_000_000,
  deepOffset: 90_000,
  connections: 50,
  seconds: 6,
  // Every server has served the passes before, and the case before this one warmed the connections'
  // paths: one second lets the previous case's load drain rather than warming a cold process.
  warmupSeconds: 1,
  // Two runs of one case seconds apart can differ by far more than a target's margin on the 2-vCPU
  // VM (BENCHMARKS.md, 'This machine and its noise'): a median of 3 paired passes leaves a target to
  // the cost, not to one unlucky pass; with references and controls run once per pass, a full run
  // stays within 10 minutes.
  passes: 3
}

/** Proves the harness works (CI runs it); its numbers mean nothing. */
export const QUICK: Settings = {
  mode: 'quick',
  database: 'tandem_bench_quick',
  counts: { users: 2_000, posts: 10_000, comments: 20_000, products: 500, orders: 0 },
  benchProducts: 50,
  benchStock: 1_000_000_000,
  deepOffset: 1_800,
  connections: 10,
  seconds: 3,
  warmupSeconds: 1,
  passes: 1
}

/** The administrator the API creates at start (ADMIN_EMAIL/ADMIN_PASSWORD); every authenticated case uses its token. */
export const ADMIN = { email: 'bench-admin@example.com', password: 'bench-admin-password' } as const

/** The category of the products the write cases order from; seeded products never have it. */
export const BENCH_CATEGORY = 'bench-stock'
