// `npm start`: the server from the TypeScript sources, as plain JavaScript. esbuild transpiles them
// (without a type check, like tsx) into .tandem/<hash of the sources>/ once per version of the
// sources; later starts reuse it. A loader that transpiles each module as it loads (tsx) starts the
// server later (the README gives both start times). One process: a signal reaches the server itself.
import { createHash } from 'node:crypto'
import { cpSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { buildOnce } from './transpiled.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const folders = ['app', 'graphql', 'plugins', 'rules', 'routes', 'schema', 'db']

/** Every file under `folder`, relative to the root. */
function walk (folder) {
  return readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name)
    return entry.isDirectory() ? walk(path) : [path]
  })
}

/** The sources' files and a name for their content. */
function sources () {
  const files = ['server.ts', ...folders.flatMap(walk)].sort()
  const hash = createHash('sha256')
  for (const file of files) hash.update(file).update(readFileSync(join(root, file)))
  return { files, name: hash.digest('hex').slice(0, 16) }
}

/** A build's name: 16 hex digits, then `.<pid>.partial` while it is made. */
const BUILD = /^[0-9a-f]{16}(\.\d+\.partial)?$/

const { files, name } = sources()
const out = await buildOnce({
  root,
  builds: join(root, '.tandem'),
  name,
  files,
  finish: (dir) => cpSync(join(root, 'schema', 'graphql'), join(dir, 'schema', 'graphql'), { recursive: true }),
  current: () => sources().name,
  again: 'start again',
  // Only builds (and partial ones): the tests keep their snapshots and builds in this folder too.
  isBuild: (entry) => BUILD.test(entry)
})

await import(pathToFileURL(join(out, 'server.js')).href)
