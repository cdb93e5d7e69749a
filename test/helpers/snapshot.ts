// The migrated embedded database every test starts from. tap runs this file once before the test
// files (`before` in package.json), so that they load it instead of each running initdb.
//
// It is kept inside the checkout (.tandem/test-snapshots, ignored by git), not in the system's
// temporary directory: a fresh clone makes its own on its first run, and two checkouts never share
// one. The same run is then as fast on a fresh clone as on one that ran the suite before.
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { sql } from 'kysely'
import { connect } from '../../db/connect.js'
import { embeddedEngine, snapshotEmbedded } from '../../db/embedded.js'
import { root } from './root.js'

/** Where the snapshots are kept: inside the checkout, beside `npm start`'s build. */
export const snapshotDirectory = join(root, '.tandem', 'test-snapshots')

// The snapshot depends on the migrations, the engine that wrote it and the migrator's own table.
async function snapshotName (): Promise<string> {
  const hash = createHash('sha256')
  const migrations = join(root, 'db', 'migrations')
  for (const file of (await readdir(migrations)).sort()) hash.update(file).update(await readFile(join(migrations, file)))
  for (const engine of [['@electric-sql', 'pglite'], ['kysely']]) hash.update(await readFile(join(root, 'node_modules', ...engine, 'package.json')))
  hash.update('without the template databases')
  return hash.digest('hex').slice(0, 16)
}

/** The snapshot in both forms: a tarball to load into memory, a data directory to copy. */
export interface Snapshot {
  /** The data directory's tarball, for `embeddedSnapshot` (PGlite in memory). */
  tarball: Blob
  /**
   * A migrated data directory, closed cleanly: a copy of it is a `DATA_DIR` ready to open, made
   * without starting PGlite once more to unpack the tarball. Never open it itself.
   */
  dataDir: string
}

/** Made aside under a name of this process and renamed into place: a file that starts alongside and makes it too loses nothing. */
async function publish (partial: string, path: string): Promise<void> {
  try {
    await rename(partial, path)
  } catch (error) {
    // Another process put its copy there first (a directory cannot be renamed over a full one).
    if ((error as NodeJS.ErrnoException).code !== 'ENOTEMPTY' && (error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    await rm(partial, { recursive: true, force: true })
  }
}

let snapshot: Promise<Snapshot> | undefined

/**
 * A migrated, empty embedded database, kept under a name that changes with the migrations and the
 * engine: made by the first run that needs it (tap's `before`), read by the others.
 */
export function migratedSnapshot (): Promise<Snapshot> {
  snapshot ??= (async () => {
    const name = await snapshotName()
    const tarball = join(snapshotDirectory, `${name}.tar`)
    const dataDir = join(snapshotDirectory, name)
    const existing = existsSync(dataDir) ? await readFile(tarball).catch(() => undefined) : undefined
    if (existing !== undefined) return { tarball: new Blob([existing]), dataDir }

    await mkdir(snapshotDirectory, { recursive: true })
    const db = await connect({})
    // The template databases are half the data directory's files and never used by a test (no test
    // creates a database on the embedded engine): without them each engine starts in about two thirds
    // of the time, once or more in every test file.
    await sql`update pg_database set datistemplate = false where datname in ('template0', 'template1')`.execute(db)
    for (const template of ['template0', 'template1']) await sql`drop database ${sql.id(template)}`.execute(db)
    await sql`checkpoint`.execute(db)
    const made = await snapshotEmbedded(db)
    await db.destroy()
    const partial = `${tarball}.${process.pid}.tmp`
    await writeFile(partial, Buffer.from(await made.arrayBuffer()))
    await publish(partial, tarball)
    // The directory, unpacked by PGlite itself and closed, so that it opens without recovery.
    const partialDir = `${dataDir}.${process.pid}.tmp`
    await rm(partialDir, { recursive: true, force: true })
    await (await embeddedEngine(partialDir, made)).close()
    await publish(partialDir, dataDir)
    // Older migrations' snapshots are never read again (40 MB each, twice).
    for (const entry of await readdir(snapshotDirectory)) {
      if (!entry.startsWith(name)) await rm(join(snapshotDirectory, entry), { recursive: true, force: true })
    }
    return { tarball: made, dataDir }
  })()
  return snapshot
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await migratedSnapshot()
