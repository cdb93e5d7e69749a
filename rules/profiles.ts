// Profiles (CONTRACT §2), declared with the public `defineResource`, as a host declares its own
// resources: one per user, made with the user at sign-up (db/users.ts, db/auth.ts) and removed with
// it, served under it (`/users/{id}/profile`); any signed-in user reads them, the user or an
// administrator changes them.
import { touched } from '../db/posts.js'
import { Profile } from '../schema/profiles.js'
import { defineResource } from '../schema/resource.js'

export const profiles = defineResource({
  name: 'profile',
  table: 'profiles',
  representation: Profile,
  generated: ['user_id', 'updated_at'],
  // The user is the owner: owner rules look at the path's id, so another user's write is 403 even
  // for a user that does not exist.
  owner: 'user_id',
  writable: ['bio', 'avatar_url', 'location'],
  // One profile per user, named by the user's id.
  relations: { user: { belongsTo: 'user', key: 'user_id', under: 'one', include: false } },
  auth: { read: 'authenticated', update: 'ownerOrAdmin' },
  hooks: {
    // The same expression as the posts' (db/posts.ts): `updated_at` moves with every change.
    beforeUpdate ({ values }) { return Object.keys(values).length === 0 ? values : touched(values) }
  }
})
