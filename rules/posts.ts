// Posts (CONTRACT §2), declared with the public `defineResource`, as a host declares its own
// resources: any signed-in user reads them and writes as themselves, an administrator as anyone;
// their author or an administrator changes them.
import { touched } from '../db/posts.js'
import type { AccessUser } from '../plugins/auth.js'
import { forbidden } from '../schema/errors.js'
import { Post } from '../schema/posts.js'
import { defineResource } from '../schema/resource.js'

/**
 * Who a new post is written as: the caller, unless an administrator names another author
 * (REST `author_id`, GraphQL `authorId`); anyone else naming another author is refused.
 */
export function authorOf (caller: AccessUser, requested: number | undefined): number {
  if (requested === undefined || requested === caller.sub) return caller.sub
  if (caller.role !== 'admin') throw forbidden('only an administrator may post as another user')
  return requested
}

export const posts = defineResource({
  name: 'post',
  table: 'posts',
  representation: Post,
  generated: ['id', 'created_at', 'updated_at'],
  owner: 'author_id',
  ownerOnCreate: authorOf,
  writable: ['title', 'content'],
  sort: ['created_at', 'title'],
  filters: ['author_id'],
  search: ['title', 'content'],
  relations: {
    // `GET /users/{id}/posts`: a user's posts, with every list parameter (the cursors of `?author_id=`).
    author: { belongsTo: 'user', key: 'author_id', required: true, under: 'also' },
    // `GET /posts/{id}/comments` is the comments' own list (they live under their post: rules/comments.ts).
    comments: { hasMany: 'comment', key: 'post_id' }
  },
  auth: { read: 'authenticated', create: 'authenticated', update: 'ownerOrAdmin', delete: 'ownerOrAdmin' },
  events: ['created'],
  hooks: {
    beforeUpdate ({ values }) { return Object.keys(values).length === 0 ? values : touched(values) }
  }
})
