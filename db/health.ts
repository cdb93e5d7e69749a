import { sql } from 'kysely'
import type { Db } from './connect.js'

/** Resolves when the database answers a trivial query; rejects otherwise. */
export async function ping (db: Db): Promise<void> {
  await sql`select 1`.execute(db)
}
