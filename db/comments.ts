import { sql } from 'kysely'
import type { Db } from './connect.js'
import { lockedWrite, type Precondition } from './locked-write.js'
import { paginate, type ListContext, type ListPage, type ListParams, type ListSpec, type Row } from './pagination.js'
import { parseInclude, rowsById } from './relations.js'
import { searchFilter } from './search.js'
import type { CommentsTable } from './types.js'

export interface Comment {
  id: number
  post_id: number
  author_id: number
  text: string
  created_at: Date
}

export const commentList: ListSpec<'comments'> = {
  table: 'comments',
  columns: ['id', 'post_id', 'author_id', 'text', 'created_at'],
  sortable: { id: {}, created_at: {} },
  filters: {
    post_id: { where: (query, postId) => query.where('post_id', '=', postId) },
    author_id: { where: (query, authorId) => query.where('author_id', '=', authorId) },
    // Within one post (its rows found by index) a plain scan of the text is cheap.
    q: searchFilter(sql`text`)
  }
}
const representation = ['id', 'post_id', 'author_id', 'text', 'created_at'] as const satisfies ReadonlyArray<keyof CommentsTable>

export interface CommentFilters {
  author_id?: number | undefined
  q?: string | undefined
  include?: string | undefined
}

/** The comments of a post; undefined when there is no such post. */
export async function listComments (db: Db, postId: number, params: ListParams & CommentFilters, context: Omit<ListContext, 'filters'>): Promise<ListPage | undefined> {
  parseInclude([], params.include)
  const filters = { post_id: postId, author_id: params.author_id, q: params.q }
  const page = await paginate(db, commentList, params, { ...context, filters })
  // Only an empty page needs to ask whether the post exists at all.
  if (page.data.length > 0) return page
  const post = await db.selectFrom('posts').select('id').where('id', '=', postId).executeTakeFirst()
  return post === undefined ? undefined : page
}

/** Comments on the post by `authorId`, in one statement; undefined when there is no such post. */
export async function createComment (db: Db, input: { postId: number, authorId: number, text: string }): Promise<Comment | undefined> {
  return db.insertInto('comments')
    .columns(['post_id', 'author_id', 'text'])
    .expression((eb) => eb.selectFrom('posts')
      .select([
        'posts.id',
        eb.cast<number>(eb.val(input.authorId), 'bigint').as('author_id'),
        eb.cast<string>(eb.val(input.text), 'text').as('text')
      ])
      .where('posts.id', '=', input.postId))
    .returning(representation)
    .executeTakeFirst()
}

export async function deleteComment (db: Db, id: number, check?: Precondition<Comment>): Promise<boolean> {
  if (check === undefined) {
    const result = await db.deleteFrom('comments').where('id', '=', id).executeTakeFirst()
    return result.numDeletedRows > 0n
  }
  const lock = (trx: Db) => trx.selectFrom('comments').select(representation).where('id', '=', id).forUpdate().executeTakeFirst()
  const deleted = await lockedWrite(db, lock, check, async (trx) => {
    await trx.deleteFrom('comments').where('id', '=', id).execute()
    return true
  })
  return deleted ?? false
}

/** The author of a comment, for the owner-or-admin rule; undefined when there is no such comment. */
export async function commentAuthor (db: Db, id: number): Promise<number | undefined> {
  const row = await db.selectFrom('comments').select('author_id').where('id', '=', id).executeTakeFirst()
  return row?.author_id
}

// A batch loader (one statement, whatever the number of ids), for GraphQL.

export async function findCommentsByIds (db: Db, ids: readonly number[]): Promise<Map<number, Comment>> {
  return rowsById<Comment & Row>(db, 'comments', ids, commentList.columns)
}
