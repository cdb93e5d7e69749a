// The checkout's root directory, with a trailing separator. `npm test` runs the suite from a build
// (scripts/test.mjs) in which every file but the transpiled TypeScript is a link to the checkout's:
// a test that starts a process, packs the package or type-checks starts from the checkout itself,
// as it does when tap runs the sources through tsx.
import { realpathSync } from 'node:fs'
import { dirname, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

export const root = dirname(realpathSync(fileURLToPath(new URL('../../tsconfig.json', import.meta.url)))) + sep
