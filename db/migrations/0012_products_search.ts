import { sql, type Kysely } from 'kysely'

// Products are declared (rules/products.ts), and a declared resource's `q` searches
// `coalesce(a::text, '') || ' ' || coalesce(b::text, '')`: the trigram index is rebuilt on exactly
// that expression, or PostgreSQL could not use it.
export async function up (db: Kysely<any>): Promise<void> {
  await sql`drop index products_search_idx`.execute(db)
  await sql`create index products_search_idx on products using gin ((coalesce(name::text, '') || ' ' || coalesce(description::text, '')) gin_trgm_ops)`.execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  await sql`drop index products_search_idx`.execute(db)
  await sql`create index products_search_idx on products using gin ((name || ' ' || coalesce(description, '')) gin_trgm_ops)`.execute(db)
}
