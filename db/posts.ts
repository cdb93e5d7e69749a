import { sql } from 'kysely'
import type { Db } from './connect.js'
import { lockedWrite, type Precondition } from './locked-write.js'
import { commentsByPostIds, type Comment } from './comments.js'
import { paginate, parseFields, selectColumns, type ListContext, type ListPage, type ListParams, type ListSpec, type Row } from './pagination.js'
import { EMBEDDED_LIMIT, firstChildren, links, parseInclude, rowsById } from './relations.js'
import { searchFilter } from './search.js'
import type { PostsTable } from './types.js'
import { userList, type User } from './users.js'

export interface Post {
  id: number
  author_id: number
  title: string
  content: string
  created_at: Date
  updated_at: Date
}
/** A post narrowed by `fields=`, with what `include=` embeds. */
export type PostSelection = Partial<Post> & Pick<Post, 'id'> & { author?: User, comments?: Comment[] }

export const postList: ListSpec<'posts'> = {
  table: 'posts',
  columns: ['id', 'author_id', 'title', 'content', 'created_at', 'updated_at'],
  sortable: { id: {}, created_at: {}, title: {} },
  filters: {
    author_id: { where: (query, authorId) => query.where('author_id', '=', authorId) },
    q: searchFilter(sql`(title || ' ' || content)`)
  }
}
const representation = ['id', 'author_id', 'title', 'content', 'created_at', 'updated_at'] as const satisfies ReadonlyArray<keyof PostsTable>

export const postIncludes = ['author', 'comments'] as const

export interface PostFilters {
  author_id?: number | undefined
  q?: string | undefined
}
export interface Shape {
  fields?: string | undefined
  include?: string | undefined
}

/** The posts of any authors, or of one (`author_id`), with `include=author,comments` embedded. */
export async function listPosts (db: Db, params: ListParams & PostFilters & Shape, context: Omit<ListContext, 'filters'>): Promise<ListPage> {
  const include = parseInclude(postIncludes, params.include)
  const filters = { author_id: params.author_id, q: params.q }
  const page = await paginate(db, postList, { ...params, fields: withAuthorId(params.fields, include) }, { ...context, filters })
  await embed(db, page.data, include, params.fields)
  return page
}

/** The posts of a user; undefined when there is no such user. */
export async function listUserPosts (db: Db, userId: number, params: ListParams & Omit<PostFilters, 'author_id'> & Shape, context: Omit<ListContext, 'filters'>): Promise<ListPage | undefined> {
  const page = await listPosts(db, { ...params, author_id: userId }, context)
  // Only an empty page needs to ask whether the user exists at all.
  if (page.data.length > 0) return page
  const user = await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst()
  return user === undefined ? undefined : page
}

export async function findPost (db: Db, id: number, shape: Shape = {}): Promise<PostSelection | undefined> {
  const include = parseInclude(postIncludes, shape.include)
  const columns = parseFields(postList, withAuthorId(shape.fields, include))
  const row = await selectColumns(db.selectFrom('posts').where('id', '=', id), postList, columns).executeTakeFirst() as Row | undefined
  if (row === undefined) return undefined
  await embed(db, [row], include, shape.fields)
  return row as PostSelection
}

// Embedding the author needs `author_id`, even when `fields=` leaves it out of the answer.
function withAuthorId (fields: string | undefined, include: Set<string>): string | undefined {
  return fields === undefined || !include.has('author') ? fields : fields + ',author_id'
}

/** Adds the included relations to the rows: one statement per relation, whatever the number of rows. */
async function embed (db: Db, rows: Row[], include: Set<string>, fields: string | undefined): Promise<void> {
  if (rows.length === 0 || include.size === 0) return
  const [authors, comments] = await Promise.all([
    include.has('author') ? usersByIds(db, rows.map((row) => row.author_id as number)) : undefined,
    include.has('comments') ? commentsByPostIds(db, rows.map((row) => row.id)) : undefined
  ])
  const keepAuthorId = parseFields(postList, fields).includes('author_id')
  for (const row of rows) {
    if (authors !== undefined) row.author = authors.get(row.author_id as number)
    if (comments !== undefined) row.comments = comments.get(row.id) ?? []
    if (!keepAuthorId) delete row.author_id
  }
}

export async function createPost (db: Db, input: { authorId: number, title: string, content: string }): Promise<Post> {
  return db.insertInto('posts')
    .values({ author_id: input.authorId, title: input.title, content: input.content })
    .returning(representation)
    .executeTakeFirstOrThrow()
}

export interface PostChanges {
  title?: string | undefined
  content?: string | undefined
}

/** Applies the changes given (PATCH) or all of them (PUT); undefined when there is no such post. */
export async function updatePost (db: Db, id: number, changes: PostChanges, check?: Precondition<Post>): Promise<Post | undefined> {
  const values = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined))
  const update = (trx: Db) => trx.updateTable('posts').set({ ...values, updated_at: sql`now()` })
    .where('id', '=', id).returning(representation).executeTakeFirst()
  if (check === undefined && Object.keys(values).length > 0) return update(db)
  return lockedWrite(db, lock(id), check, async (trx, current) => Object.keys(values).length === 0 ? current : update(trx))
}

const lock = (id: number) => (trx: Db) => trx.selectFrom('posts').select(representation).where('id', '=', id).forUpdate().executeTakeFirst()

/** Deletes the post and, by cascade, its comments; false when there is no such post. */
export async function deletePost (db: Db, id: number, check?: Precondition<Post>): Promise<boolean> {
  if (check === undefined) {
    const result = await db.deleteFrom('posts').where('id', '=', id).executeTakeFirst()
    return result.numDeletedRows > 0n
  }
  const deleted = await lockedWrite(db, lock(id), check, async (trx) => {
    await trx.deleteFrom('posts').where('id', '=', id).execute()
    return true
  })
  return deleted ?? false
}

/** The author of a post, for the owner-or-admin rule; undefined when there is no such post. */
export async function postAuthor (db: Db, id: number): Promise<number | undefined> {
  const row = await db.selectFrom('posts').select('author_id').where('id', '=', id).executeTakeFirst()
  return row?.author_id
}

// Batch loaders (one statement each, whatever the number of ids), for `include=` and GraphQL.

// `columns` narrows the rows to what the caller reads (GraphQL asks only for the fields selected).

export async function findPostsByIds (db: Db, ids: readonly number[], columns: readonly string[] = postList.columns): Promise<Map<number, Post>> {
  return rowsById<Post & Row>(db, 'posts', ids, columns)
}

/** The first `limit` posts (by id) of each author; `columns` must include `author_id`. */
export async function postsByAuthorIds (db: Db, authorIds: readonly number[], limit = EMBEDDED_LIMIT, columns: readonly string[] = postList.columns): Promise<Map<number, Post[]>> {
  return firstChildren<Post & Row>(db, links.postsOfAuthor.table, links.postsOfAuthor.key, authorIds, columns, limit)
}

/** Users in their public representation (authors of posts and comments). */
export async function usersByIds (db: Db, ids: readonly number[], columns: readonly string[] = userList.columns): Promise<Map<number, User>> {
  return rowsById<User & Row>(db, 'users', ids, columns)
}
