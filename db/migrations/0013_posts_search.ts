import { sql, type Kysely } from 'kysely'

// Posts are declared (rules/posts.ts), and a declared resource's `q` searches
// `coalesce(a::text, '') || ' ' || coalesce(b::text, '')`: the trigram index is rebuilt on exactly
// that expression, or PostgreSQL could not use it.
export async function up (db: Kysely<any>): Promise<void> {
  await sql`drop index posts_search_idx`.execute(db)
  await sql`create index posts_search_idx on posts using gin ((coalesce(title::text, '') || ' ' || coalesce(content::text, '')) gin_trgm_ops)`.execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  await sql`drop index posts_search_idx`.execute(db)
  await sql`create index posts_search_idx on posts using gin ((title || ' ' || content) gin_trgm_ops)`.execute(db)
}
