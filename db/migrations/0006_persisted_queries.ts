import { sql, type Kysely } from 'kysely'

export async function up (db: Kysely<any>): Promise<void> {
  // Automatic persisted queries: the GraphQL document of each SHA-256 hash, shared by every
  // instance. `sha256` is the lowercase hex digest of `query` (64 characters).
  await db.schema.createTable('persisted_queries')
    .addColumn('sha256', 'text', (c) => c.primaryKey().check(sql`sha256 ~ '^[0-9a-f]{64}$'`))
    .addColumn('query', 'text', (c) => c.notNull())
    .addColumn('created_at', sql`timestamptz(3)`, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('persisted_queries').ifExists().execute()
}
