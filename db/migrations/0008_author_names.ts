import { sql, type Kysely } from 'kysely'

// The name of a post's or comment's author, read by id (GraphQL `author { name }`, once per post and
// comment a nested query shows), comes from this index alone: an index-only scan skips the heap page
// and its visibility check (see PERFORMANCE-DECISIONS.md, 'Covering index for authors' names').
// Names fit in an index entry already: `users_name_id_idx` holds them too.
export async function up (db: Kysely<any>): Promise<void> {
  await sql`create index users_id_name_idx on users (id) include (name)`.execute(db)
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('users_id_name_idx').ifExists().execute()
}
