// The embedded database (PGlite). Kept apart from connect.ts so that neither its code nor its types
// reach a server or a host application that runs on a real PostgreSQL.
import type { PGlite } from '@electric-sql/pglite'
import { Kysely } from 'kysely'
import { DATE, INT8, NUMERIC, TIMESTAMP, toNumber, toSafeNumber, type Db } from './connect.js'
import { parseDate, parseTimestamp } from './timestamps.js'
import type { TandemDatabase } from './types.js'

/** The engine itself: PGlite with the extensions the migrations need, ready for statements. */
export async function embeddedEngine (dataDir: string | undefined, snapshot?: Blob): Promise<PGlite> {
  const [{ PGlite }, { pg_trgm: pgTrgm }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('@electric-sql/pglite/contrib/pg_trgm')
  ])
  const pglite = new PGlite(dataDir ?? 'memory://', {
    extensions: { pg_trgm: pgTrgm },
    // As connect.ts's: a `date` is its text, a `timestamp` read as UTC, whatever the process's time zone.
    parsers: { [INT8]: toSafeNumber, [NUMERIC]: toNumber, [DATE]: parseDate, [TIMESTAMP]: parseTimestamp },
    ...(snapshot === undefined ? {} : { loadDataDir: snapshot })
  })
  await pglite.waitReady
  return pglite
}

const engines = new WeakMap<Db, PGlite>()

/** A Kysely over an embedded database in `dataDir` (default: in memory), started from `snapshot` if given. */
export async function embedded (dataDir: string | undefined, snapshot: Blob | undefined): Promise<Db> {
  const [pglite, { PGliteDialect }] = await Promise.all([embeddedEngine(dataDir, snapshot), import('kysely-pglite-dialect')])
  const db = new Kysely<TandemDatabase>({ dialect: new PGliteDialect(pglite) })
  engines.set(db, pglite)
  return db
}

/** The PGlite engine under an embedded database's Kysely; undefined for a real server's. */
export const engineOf = (db: Db): PGlite | undefined => engines.get(db)

/** The embedded database's data directory as a tarball, for `embeddedSnapshot`. */
export async function snapshotEmbedded (db: Db): Promise<Blob> {
  const pglite = engineOf(db)
  if (pglite === undefined) throw new Error('only an embedded database can be dumped')
  return pglite.dumpDataDir('none')
}
