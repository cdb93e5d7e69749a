import type { Db } from './connect.js'
import type { Row } from './pagination.js'
import { postsByAuthorIds } from './posts.js'
import { profilesByUserIds } from './profiles.js'
import { parseInclude } from './relations.js'

export const userIncludes = ['posts', 'profile'] as const

/**
 * Embeds `include=posts,profile` into users: one statement per relation, whatever the number of
 * users; posts stop at the first 20 of each user.
 */
export async function embedUserRelations (db: Db, rows: Row[], include: string | undefined): Promise<void> {
  const wanted = parseInclude(userIncludes, include)
  if (rows.length === 0 || wanted.size === 0) return
  const ids = rows.map((row) => row.id)
  const [posts, profiles] = await Promise.all([
    wanted.has('posts') ? postsByAuthorIds(db, ids) : undefined,
    wanted.has('profile') ? profilesByUserIds(db, ids) : undefined
  ])
  for (const row of rows) {
    if (posts !== undefined) row.posts = posts.get(row.id) ?? []
    if (profiles !== undefined) row.profile = profiles.get(row.id) ?? null
  }
}
