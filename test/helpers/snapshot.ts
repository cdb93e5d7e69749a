// The migrated embedded database every test starts from. tap runs this file once before the test
// files (`before` in package.json), so that they load it instead of each running initdb.
import { createHash } from 'node:crypto'
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { connect } from '../../db/connect.js'
import { snapshotEmbedded } from '../../db/embedded.js'

const root = fileURLToPath(new URL('../..', import.meta.url))

const directory = join(tmpdir(), 'tandem-test-snapshots')

// The snapshot depends on the migrations, the engine that wrote it and the migrator's own table.
async function snapshotPath (): Promise<string> {
  const hash = createHash('sha256')
  const migrations = join(root, 'db', 'migrations')
  for (const file of (await readdir(migrations)).sort()) hash.update(file).update(await readFile(join(migrations, file)))
  for (const engine of [['@electric-sql', 'pglite'], ['kysely']]) hash.update(await readFile(join(root, 'node_modules', ...engine, 'package.json')))
  return join(directory, `${hash.digest('hex').slice(0, 16)}.tar`)
}

let snapshot: Promise<Blob> | undefined

/**
 * A migrated, empty embedded database as a tarball, kept in the system's temporary directory under a
 * name that changes with the migrations and the engine: made by the first run that needs it.
 */
export function migratedSnapshot (): Promise<Blob> {
  snapshot ??= (async () => {
    const path = await snapshotPath()
    const existing = await readFile(path).catch(() => undefined)
    if (existing !== undefined) return new Blob([existing])
    const db = await connect({})
    const made = await snapshotEmbedded(db)
    await db.destroy()
    await mkdir(directory, { recursive: true })
    // Files that start together may both make it: each writes its own, the last rename wins.
    const partial = `${path}.${process.pid}.tmp`
    await writeFile(partial, Buffer.from(await made.arrayBuffer()))
    await rename(partial, path)
    // Older migrations' snapshots are never read again (40 MB each).
    for (const file of await readdir(directory)) {
      if (file.endsWith('.tar') && join(directory, file) !== path) await rm(join(directory, file), { force: true })
    }
    return made
  })()
  return snapshot
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await migratedSnapshot()
