import { Type, type Static } from '@sinclair/typebox'
import { Id, ListQuery, Selectable, Timestamp } from './common.js'
import { Comment } from './comments.js'
import { User } from './users.js'

const Title = Type.String({ minLength: 1, maxLength: 300 })
const Content = Type.String({ minLength: 1, maxLength: 100_000 })

export const Post = Type.Object({
  id: Id,
  author_id: Id,
  title: Title,
  content: Content,
  created_at: Timestamp,
  updated_at: Timestamp
}, { additionalProperties: false })

/** A post as `fields=` narrows it, with the relations `include=` embeds. */
export const PostFields = Selectable({
  author_id: Id,
  title: Title,
  content: Content,
  created_at: Timestamp,
  updated_at: Timestamp,
  author: User,
  comments: Type.Array(Comment, { maxItems: 20, description: 'The first 20 comments, by id.' })
})

export const ReplacePostBody = Type.Object({ title: Title, content: Content }, { additionalProperties: false })
export type ReplacePostBodyType = Static<typeof ReplacePostBody>

/** A new post; `author_id` (an administrator's choice) defaults to the caller. */
export const CreatePostBody = Type.Object({
  title: Title,
  content: Content,
  author_id: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The author: your own id; an administrator may name anyone. Default: you.' }))
}, { additionalProperties: false })

export const PatchPostBody = Type.Partial(ReplacePostBody, { additionalProperties: false })

export const postSortable = ['id', 'created_at', 'title'] as const

/** A user's posts: the author is the path's. */
export const UserPostListQuery = ListQuery(postSortable, {})
export type UserPostListQueryType = Static<typeof UserPostListQuery>

export const PostListQuery = ListQuery(postSortable, { author_id: Type.Optional(Id) })
export type PostListQueryType = Static<typeof PostListQuery>
