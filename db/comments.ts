// Comments are a declaration (rules/comments.ts): their statements are db/resource.ts's. What stays
// here writes a comment directly, as the tests do.
import type { Db } from './connect.js'
import type { CommentsTable } from './types.js'

export interface Comment {
  id: number
  post_id: number
  author_id: number
  text: string
  created_at: Date
}

const representation = ['id', 'post_id', 'author_id', 'text', 'created_at'] as const satisfies ReadonlyArray<keyof CommentsTable>

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
