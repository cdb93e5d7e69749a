import type { Kysely } from 'kysely'
import type { Database } from './types.js'

/**
 * `app.db` typed with the host's own tables beside Tandem's, for the host's queries on them. The
 * same connection and pool: only the type widens (Fastify's decorator keeps Tandem's type).
 * @example
 * interface HostTables { post_labels: { label_id: number, post_id: number } }
 * await withTables<HostTables>(app.db).insertInto('post_labels').values({ label_id: 1, post_id: 2 }).execute()
 */
export function withTables<Tables> (db: Kysely<Database>): Kysely<Database & Tables> {
  return db as unknown as Kysely<Database & Tables>
}
