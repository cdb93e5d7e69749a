// The one module that relies on what pg and Kysely do without documenting it. The rest of db/
// uses only what is exported here, and each piece is checked when a database is opened
// (`checkPg`, `checkKysely`): when the installed version no longer behaves as assumed, one warning
// names the package and its version, and the statements take the library's public path.
// PERFORMANCE-DECISIONS.md has a section for each piece: what it gains, how to remove it.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { sql, type Kysely } from 'kysely'
import pg from 'pg'
import type { TandemDatabase } from '../types.js'
import { fillsLike, placeholders } from './placeholders.js'
import { missingFromQuery, submitShaped, type RowShapes } from './pg-query.js'

export { fill, fillsLike, placeholders } from './placeholders.js'
export { submitShaped, type Done, type RowShapes } from './pg-query.js'

/**
 * What the start check inspects of the installed pg. Tests replace `Query` to play a pg whose
 * `Query` changed; nothing else should.
 */
export const installed = { Query: pg.Query }

const require = createRequire(import.meta.url)

/** The installed version of `name`, read from the package.json above its entry point. */
function versionOf (name: string): string {
  try {
    let dir = dirname(require.resolve(name))
    while (dir !== dirname(dir)) {
      try {
        const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string, version?: string }
        if (manifest.name === name) return manifest.version ?? 'unknown'
      } catch {}
      dir = dirname(dir)
    }
  } catch {}
  return 'unknown'
}

const warned = new Set<string>()

/**
 * A process warning (`TandemWarning`, code `TANDEM_DRIVER_INTERNALS`) naming the package, its
 * installed version, what changed and what runs instead; each text once per process.
 */
function warnChanged (name: 'pg' | 'kysely', change: string, instead: string, section: string): void {
  const message = `${name} ${versionOf(name)}: ${change}; ${instead} (PERFORMANCE-DECISIONS.md, '${section}')`
  if (warned.has(message)) return
  warned.add(message)
  process.emitWarning(message, { type: 'TandemWarning', code: 'TANDEM_DRIVER_INTERNALS' })
}

// Named outside the `tandem_<n>` names of db/prepared.ts, and deallocated after the check.
const PROBE_NAME = 'tandem_internals_probe'
// Two rows; two columns of one name (the later wins), a null, a parameter of each kind.
const PROBE_TEXT = "select $1::int4 as id, $2::text as name, null::text as nothing, 'later'::text as id from generate_series(1, 2)"
const PROBE_VALUES = [7, 'probe']

const sameRows = (ours: unknown[], theirs: unknown[]): boolean =>
  JSON.stringify(ours.map((row) => Object.entries(row as object))) === JSON.stringify(theirs.map((row) => Object.entries(row as object)))

/**
 * Whether statements on `pool` may run as pg `Query` objects that build their rows by shape
 * (./pg-query.ts). First what can be seen without a server (the methods and fields `ShapedQuery`
 * uses), then one probe statement on one pooled connection, run both ways: the shaped rows must be
 * pg's own. Otherwise a warning, and false: statements then go through `client.query`.
 */
export async function checkPg (pool: pg.Pool): Promise<boolean> {
  const section = 'Rows built by generated builders'
  const instead = 'statements run through pg\'s public client.query instead'
  const missing = missingFromQuery(installed.Query)
  if (missing !== undefined) {
    warnChanged('pg', `${missing}, which Tandem's shaped rows rely on, is not what it was`, instead, section)
    return false
  }
  const client = await pool.connect()
  try {
    // pg's public path first: if the server cannot answer it, opening the database fails as it would anyway.
    const theirs = await client.query(PROBE_TEXT, PROBE_VALUES)
    const shapes: RowShapes = new Map()
    const ours = await new Promise<pg.QueryResult | Error>((resolve) => {
      submitShaped(client, PROBE_TEXT, [...PROBE_VALUES], PROBE_NAME, shapes, (error, result) => { resolve(error ?? result) })
    })
    await client.query(`deallocate ${PROBE_NAME}`).catch(() => {})
    if (ours instanceof Error || !shapes.has(PROBE_NAME) || !sameRows(ours.rows, theirs.rows)) {
      const change = ours instanceof Error
        ? `a statement run as a shaped Query failed (${ours.message})`
        : shapes.has(PROBE_NAME) ? 'rows built by shape differ from pg\'s own' : 'Query no longer calls handleRowDescription'
      warnChanged('pg', change, instead, section)
      return false
    }
    return true
  } finally {
    client.release()
  }
}

const PLACEHOLDERS_SECTION = 'List and relation statements compiled once per shape'
let kyselyCarriesPlaceholders = true

/**
 * Whether Kysely carries placeholder objects through compilation untouched, as `ShapedStatements`
 * (db/statements.ts) needs; false once a check found otherwise.
 */
export const placeholdersHold = (): boolean => kyselyCarriesPlaceholders

/** A statement with a value in each place a list or relation statement has one. */
const probe = (db: Kysely<TandemDatabase>, values: readonly unknown[]) => db.selectFrom('users').select('id')
  .where('id', '>', values[0] as number)
  .where('created_at', '<', values[1] as Date)
  .where(sql<boolean>`id = any(${values[2]}::bigint[])`)
  .orderBy('id').limit(values[3] as number).offset(values[4] as number)
  .compile()

/**
 * Checks on `db` that a statement built over placeholders and filled in is the one Kysely compiles
 * from the values themselves. Otherwise a warning, and from then on every statement is compiled
 * per request.
 */
export function checkKysely (db: Kysely<TandemDatabase>): boolean {
  const values = [1, new Date(0), '{1,2}', 21, 0]
  if (fillsLike(probe(db, placeholders(values.length)), probe(db, values), values)) return true
  kyselyCarriesPlaceholders = false
  warnChanged('kysely', 'a statement compiled over placeholders differs from the one compiled from its values',
    'statements are compiled per request instead', PLACEHOLDERS_SECTION)
  return false
}

/** One statement's template did not fill in as Kysely compiles it: that shape is compiled per request. */
export function placeholdersDiffered (): void {
  warnChanged('kysely', 'a statement compiled over placeholders differs from the one compiled from its values',
    'that statement is compiled per request instead', PLACEHOLDERS_SECTION)
}
