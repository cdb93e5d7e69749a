import { Type } from '@sinclair/typebox'
import { Id, Timestamp } from './common.js'

/** A comment as REST shows it: the representation of the comments' declaration (rules/comments.ts). */
export const Comment = Type.Object({
  id: Id,
  post_id: Id,
  author_id: Id,
  text: Type.String({ minLength: 1, maxLength: 10_000 }),
  created_at: Timestamp
}, { additionalProperties: false })
