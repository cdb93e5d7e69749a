// The examples import Tandem as a host does, by its package name; in this repository's tests that
// name means these sources (tsc maps it the same way, by `paths` in tsconfig.json).
import { register } from 'node:module'

const index = new URL('../../index.ts', import.meta.url).href
register('data:text/javascript,' + encodeURIComponent(
  `export async function resolve (specifier, context, next) { return next(specifier === 'tandem-api' ? ${JSON.stringify(index)} : specifier, context) }`
))
