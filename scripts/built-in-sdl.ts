// Writes the GraphQL SDL files of the built-in declared resources (schema/graphql/declared/Product.graphql…)
// from their declarations: `npm run sdl`. test/rules/built-in-resources.test.ts fails when they differ.
import { writeFile } from 'node:fs/promises'
import { builtInSdlFiles } from '../rules/built-in-resources.js'

for (const { file, sdl } of builtInSdlFiles()) {
  await writeFile(new URL(`../schema/graphql/declared/${file}`, import.meta.url), sdl)
  process.stdout.write(`schema/graphql/declared/${file}\n`)
}
