import { Type } from '@sinclair/typebox'
import { Id, Timestamp } from './common.js'

/** A post as both styles show it; the declaration (rules/posts.ts) derives every other schema from it. */
export const Post = Type.Object({
  id: Id,
  author_id: Id,
  title: Type.String({ minLength: 1, maxLength: 300 }),
  content: Type.String({ minLength: 1, maxLength: 100_000 }),
  created_at: Timestamp,
  updated_at: Timestamp
}, { additionalProperties: false })
