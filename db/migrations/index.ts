import type { Migration } from 'kysely'
import * as initial from './0001_initial.js'

/** Every migration, in order. Listed statically so that they ship inside `dist/` with no file lookups. */
export const migrations: Record<string, Migration> = {
  '0001_initial': initial
}
