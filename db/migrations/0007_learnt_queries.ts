import { sql, type Kysely } from 'kysely'

export async function up (db: Kysely<any>): Promise<void> {
  // Documents learnt through automatic persisted queries (any client can add them) are kept up to
  // a limit, the least recently used dropped first; registered ones are kept for good. Rows from
  // before this migration count as registered.
  await db.schema.alterTable('persisted_queries')
    .addColumn('learnt', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('used_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('persisted_queries_learnt_used_at').on('persisted_queries').column('used_at')
    .where(sql.ref('learnt'), '=', true)
    .execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('persisted_queries_learnt_used_at').ifExists().execute()
  await db.schema.alterTable('persisted_queries').dropColumn('used_at').dropColumn('learnt').execute()
}
