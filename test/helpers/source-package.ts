// The examples import Tandem as a host does, by its package name; in this repository's tests that
// name means these sources (tsc maps it the same way, by `paths` in tsconfig.json). In the build that
// `npm test` runs (scripts/test.mjs) the name is the package's own, and the build's manifest points it
// at the transpiled index. Run through tsx, it takes a resolve hook: a hook's thread slows every
// import after it, so it is registered only where it is needed.
import { existsSync } from 'node:fs'
import { register } from 'node:module'

const built = new URL('../../index.js', import.meta.url)
let registered = false

/** Resolves `tandem-api` to these sources from any module, inside the package or not (the docs' blocks). */
export function resolveTandemApiEverywhere (): void {
  if (registered) return
  registered = true
  const index = existsSync(built) ? built.href : new URL('../../index.ts', import.meta.url).href
  register('data:text/javascript,' + encodeURIComponent(
    `export async function resolve (specifier, context, next) { return next(specifier === 'tandem-api' ? ${JSON.stringify(index)} : specifier, context) }`
  ))
}

if (!existsSync(built)) resolveTandemApiEverywhere()
