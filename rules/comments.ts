// Comments (CONTRACT §2), declared with the public `defineResource`, as a host declares its own
// resources: they live under their post, any signed-in user reads them and comments as themselves,
// their author or an administrator deletes them, and nobody edits them.
import { Comment } from '../schema/comments.js'
import { defineResource } from '../schema/resource.js'

export const comments = defineResource({
  name: 'comment',
  table: 'comments',
  representation: Comment,
  generated: ['id', 'created_at'],
  owner: 'author_id',
  writable: ['text'],
  sort: ['created_at'],
  filters: ['author_id'],
  // Within one post (its rows found by index) a plain scan of the text is cheap: no trigram index.
  search: ['text'],
  relations: {
    // GraphQL's Comment.author and Comment.post; REST embeds neither (CONTRACT §3 lists no include for comments).
    author: { belongsTo: 'user', key: 'author_id', required: true, include: false },
    // `GET/POST /posts/{id}/comments`: a comment is made on its post, and listed with the post's others.
    post: { belongsTo: 'post', key: 'post_id', under: 'only', include: false }
  },
  auth: { read: 'authenticated', create: 'authenticated', update: false, delete: 'ownerOrAdmin' },
  // `commentAdded(postId: ID!)`: a subscriber follows one post.
  events: { created: { subscription: 'commentAdded', require: ['post_id'] } }
})
