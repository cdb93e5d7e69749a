import type { Kysely } from 'kysely'

// Keyset pages of one author's posts, or one post's comments, sorted by `created_at`: an index
// range scan from the cursor on, like the unfiltered lists (the (fk, id) indexes only serve `id`).
export async function up (db: Kysely<any>): Promise<void> {
  await db.schema.createIndex('posts_author_id_created_at_id_idx').on('posts').columns(['author_id', 'created_at', 'id']).execute()
  await db.schema.createIndex('comments_post_id_created_at_id_idx').on('comments').columns(['post_id', 'created_at', 'id']).execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('comments_post_id_created_at_id_idx').ifExists().execute()
  await db.schema.dropIndex('posts_author_id_created_at_id_idx').ifExists().execute()
}
