import type { Db } from './connect.js'
import type { Row } from './pagination.js'
import { postsByAuthorIds } from './posts.js'
import { parseInclude } from './relations.js'

// `include=profile` is the profiles' declaration's (rules/profiles.ts), as a singular of users.
export const userIncludes = ['posts'] as const

/**
 * Embeds `include=posts` into users: one statement, whatever the number of users; posts stop at
 * the first 20 of each user.
 */
export async function embedUserRelations (db: Db, rows: Row[], include: string | undefined): Promise<void> {
  const wanted = parseInclude(userIncludes, include)
  if (rows.length === 0 || wanted.size === 0) return
  const ids = rows.map((row) => row.id)
  const posts = await postsByAuthorIds(db, ids)
  for (const row of rows) row.posts = posts.get(row.id) ?? []
}
