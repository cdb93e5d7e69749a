// A transpiled copy of the checkout's TypeScript, made once per version of the sources and kept under
// a name that is a hash of them: `npm start` (scripts/start.mjs) and `npm test` (scripts/test.mjs).
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, utimesSync } from 'node:fs'
import { join } from 'node:path'

/**
 * `builds/name`, made when missing: the TypeScript among `files` (paths relative to `root`) transpiled
 * by esbuild (without a type check, like tsx), then `finish(dir, final)` adds the rest (`final` is
 * where `dir` will be). It is made aside and renamed into place, so that processes running at once
 * never see half a build, nor a failed one. When the sources changed meanwhile (`current()` is no
 * longer `name`) the process ends saying `again`: a build kept under a name that is not its content's
 * would be used later. Each call marks its build as in use; other builds (those `isBuild` accepts by
 * name: the folder may hold other things) are removed once unused for `staleMs`, since another
 * process may still be running one.
 */
export async function buildOnce ({ root, builds, name, files, finish, current, again, isBuild = () => true, staleMs = 60 * 60 * 1000 }) {
  const out = join(builds, name)
  if (!existsSync(out)) {
    const { buildSync } = await import('esbuild')
    const partial = `${out}.${process.pid}.partial`
    try {
      buildSync({
        entryPoints: files.filter((file) => /(?<!\.d)\.ts$/.test(file)).map((file) => join(root, file)),
        outdir: partial,
        outbase: root,
        format: 'esm',
        platform: 'node',
        target: 'node20',
        logLevel: 'warning'
      })
      await finish(partial, out)
    } catch (error) {
      rmSync(partial, { recursive: true, force: true })
      throw error
    }
    mkdirSync(builds, { recursive: true })
    if (current() !== name) {
      rmSync(partial, { recursive: true, force: true })
      process.stderr.write(`tandem: the sources changed while they were transpiled; ${again}\n`)
      process.exit(1)
    }
    try {
      renameSync(partial, out)
    } catch (error) {
      // Another process made the same build first; anything else is a real failure.
      if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error
      rmSync(partial, { recursive: true, force: true })
    }
  }
  markUsed(out)
  for (const entry of readdirSync(builds)) {
    const path = join(builds, entry)
    if (isBuild(entry) && entry !== name && Date.now() - statSync(path).mtimeMs > staleMs) rmSync(path, { recursive: true, force: true })
  }
  return out
}

/** Marks a build as in use now (its folder's modification time), so that no other process removes it. */
export function markUsed (out) {
  try {
    const now = new Date()
    utimesSync(out, now, now)
  } catch {}
}
