// `npm start`: the server from the TypeScript sources, as plain JavaScript. esbuild transpiles them
// (without a type check, like tsx) into .tandem/<hash of the sources>/ once per version of the
// sources; later starts reuse it. A loader that transpiles each module as it loads (tsx) starts the
// server later (the README gives both start times). One process: a signal reaches the server itself.
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const folders = ['app', 'plugins', 'rules', 'routes', 'schema', 'db']

/** Every file under `folder`, relative to the root. */
function walk (folder) {
  return readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    return entry.isDirectory() ? walk(path) : [path]
  })
}

const files = ['server.ts', ...folders.flatMap(walk)].sort()
const hash = createHash('sha256')
for (const file of files) hash.update(file).update(readFileSync(join(root, file)))
const builds = join(root, '.tandem')
const name = hash.digest('hex').slice(0, 16)
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
  try {
    renameSync(partial, out)
  } catch {
    // Another start made the same build first.
    rmSync(partial, { recursive: true, force: true })
  }
  // Builds of other versions of the sources are not started again.
  for (const entry of readdirSync(builds)) {
    if (entry !== name && !entry.endsWith('.partial')) rmSync(join(builds, entry), { recursive: true, force: true })
  }
}

await import(pathToFileURL(join(out, 'server.js')).href)
