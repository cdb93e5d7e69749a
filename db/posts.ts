// The posts' statements beyond those their declaration gives (rules/posts.ts, db/resource.ts).
import { sql } from 'kysely'
import { Post as PostSchema } from '../schema/posts.js'
import type { Db } from './connect.js'
import type { Row } from './pagination.js'
import { EMBEDDED_LIMIT, firstChildren, links } from './relations.js'

export interface Post {
  id: number
  author_id: number
  title: string
  content: string
  created_at: Date
  updated_at: Date
}

/** The columns of a post as both styles show it, `id` first. */
export const postColumns: readonly string[] = Object.keys(PostSchema.properties)

/** The values of a change with `updated_at` moved to the time of the write. */
export function touched (values: Record<string, unknown>): Record<string, unknown> {
  return { ...values, updated_at: sql`now()` }
}

/** Adds a post with no rule applied (seeds and tests; the API's creates go through the declaration). */
export async function createPost (db: Db, input: { authorId: number, title: string, content: string }): Promise<Post> {
  return db.insertInto('posts')
    .values({ author_id: input.authorId, title: input.title, content: input.content })
    .returning(['id', 'author_id', 'title', 'content', 'created_at', 'updated_at'])
    .executeTakeFirstOrThrow()
}

/** The first `limit` posts (by id) of each author, in one statement (users' `include=posts`); `columns` must include `author_id`. */
export async function postsByAuthorIds (db: Db, authorIds: readonly number[], limit = EMBEDDED_LIMIT, columns: readonly string[] = postColumns): Promise<Map<number, Post[]>> {
  return firstChildren<Post & Row, number>(db, links.postsOfAuthor.table, links.postsOfAuthor.key, authorIds, columns, limit)
}
