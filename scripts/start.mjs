// `npm start`: the server from the TypeScript sources, as plain JavaScript. esbuild transpiles them
// (without a type check, like tsx) into .tandem/<hash of the sources>/ once per version of the
// sources; later starts reuse it. A loader that transpiles each module as it loads (tsx) starts the
// server later (the README gives both start times). One process: a signal reaches the server itself.
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const folders = ['app', 'graphql', 'plugins', 'rules', 'routes', 'schema', 'db']

/** Every file under `folder`, relative to the root. */
function walk (folder) {
  return readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    return entry.isDirectory() ? walk(path) : [path]
  })
}

// Builds of other versions are removed once this old: a start of another version may still be loading one.
const STALE_MS = 60 * 60 * 1000
/** A build's name: 16 hex digits, then `.<pid>.partial` while it is made. */
const BUILD = /^[0-9a-f]{16}(\.\d+\.partial)?$/

/** The sources' files and a name for their content. */
function sources () {
  const files = ['server.ts', ...folders.flatMap(walk)].sort()
  const hash = createHash('sha256')
  for (const file of files) hash.update(file).update(readFileSync(join(root, file)))
  return { files, name: hash.digest('hex').slice(0, 16) }
}

const { files, name } = sources()
const builds = join(root, '.tandem')
const out = join(builds, name)

if (!existsSync(join(out, 'server.js'))) {
  const { buildSync } = await import('esbuild')
  // Made aside and renamed into place, so that starts running at once never see half a build.
  const partial = `${out}.${process.pid}.partial`
  buildSync({
    entryPoints: files.filter((file) => file.endsWith('.ts')).map((file) => join(root, file)),
    outdir: partial,
    outbase: root,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning'
  })
  cpSync(join(root, 'schema', 'graphql'), join(partial, 'schema', 'graphql'), { recursive: true })
  mkdirSync(builds, { recursive: true })
  if (sources().name !== name) {
    // A build kept under a name that is not its content's would be started again later.
    rmSync(partial, { recursive: true, force: true })
    process.stderr.write('tandem: the sources changed while they were transpiled; start again\n')
    process.exit(1)
  }
  try {
    renameSync(partial, out)
  } catch (error) {
    // Another start made the same build first; anything else is a real failure.
    if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error
    rmSync(partial, { recursive: true, force: true })
  }
  for (const entry of readdirSync(builds)) {
    const path = join(builds, entry)
    // Only builds (and partial ones) of other sources: the tests keep their snapshots here too.
    if (BUILD.test(entry) && entry !== name && Date.now() - statSync(path).mtimeMs > STALE_MS) rmSync(path, { recursive: true, force: true })
  }
}

await import(pathToFileURL(join(out, 'server.js')).href)
