import { Type } from '@sinclair/typebox'
import { Post } from './posts.js'
import { UserFields } from './users.js'

/**
 * A user as GETs return it: narrowed by `fields=`, with what `include=posts` embeds (`include=profile`
 * is added by the profiles' declaration, as a declared resource's relations are).
 */
export const UserView = Type.Composite([
  UserFields,
  Type.Partial(Type.Object({
    posts: Type.Array(Post, { maxItems: 20, description: 'The first 20 posts, by id.' })
  }))
])
