import { Type, type Static } from '@sinclair/typebox'
import { Id, ListQuery, Selectable, Timestamp } from './common.js'

const Text = Type.String({ minLength: 1, maxLength: 10_000 })

export const Comment = Type.Object({
  id: Id,
  post_id: Id,
  author_id: Id,
  text: Text,
  created_at: Timestamp
}, { additionalProperties: false })

export const CommentFields = Selectable({ post_id: Id, author_id: Id, text: Text, created_at: Timestamp })

export const CreateCommentBody = Type.Object({ text: Text }, { additionalProperties: false })
export type CreateCommentBodyType = Static<typeof CreateCommentBody>

export const commentSortable = ['id', 'created_at'] as const

/** The comments of one post: the post is the path's, `author_id` narrows further. */
export const CommentListQuery = ListQuery(commentSortable, { author_id: Type.Optional(Id) })
export type CommentListQueryType = Static<typeof CommentListQuery>
