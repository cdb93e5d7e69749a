import { sql } from 'kysely'
import type { Db } from './connect.js'
import { lockedWrite, type Precondition } from './locked-write.js'
import { parseFields, selectColumns, type ListSpec } from './pagination.js'
import type { ProfilesTable } from './types.js'

export interface Profile {
  user_id: number
  bio: string | null
  avatar_url: string | null
  location: string | null
  updated_at: Date
}
export type ProfileSelection = Partial<Profile> & Pick<Profile, 'user_id'>

// Only `fields=` is read from it: profiles are not listed.
const profileSpec: ListSpec<'profiles'> = {
  table: 'profiles',
  columns: ['user_id', 'bio', 'avatar_url', 'location', 'updated_at'],
  sortable: {}
}
const representation = ['user_id', 'bio', 'avatar_url', 'location', 'updated_at'] as const satisfies ReadonlyArray<keyof ProfilesTable>

export async function findProfile (db: Db, userId: number, fields?: string): Promise<ProfileSelection | undefined> {
  const columns = parseFields(profileSpec, fields)
  if (!columns.includes('user_id')) columns.unshift('user_id')
  const query = selectColumns(db.selectFrom('profiles').where('user_id', '=', userId), profileSpec, columns)
  return await query.executeTakeFirst() as ProfileSelection | undefined
}

export interface ProfileChanges {
  bio?: string | null | undefined
  avatar_url?: string | null | undefined
  location?: string | null | undefined
}

/**
 * Sets the fields given (undefined ones are kept, null clears) and `updated_at`; undefined when
 * the user has no profile (there is no such user).
 */
export async function updateProfile (db: Db, userId: number, changes: ProfileChanges, check?: Precondition<Profile>): Promise<Profile | undefined> {
  const values = Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined))
  const update = (trx: Db) => trx.updateTable('profiles').set({ ...values, updated_at: sql`now()` })
    .where('user_id', '=', userId).returning(representation).executeTakeFirst()
  if (check === undefined && Object.keys(values).length > 0) return update(db)
  const lock = (trx: Db) => trx.selectFrom('profiles').select(representation).where('user_id', '=', userId).forUpdate().executeTakeFirst()
  return lockedWrite(db, lock, check, async (trx, current) => Object.keys(values).length === 0 ? current : update(trx))
}

/** Profiles of the given users, in one statement (for GraphQL and `include=profile`). */
export async function profilesByUserIds (db: Db, userIds: readonly number[]): Promise<Map<number, Profile>> {
  if (userIds.length === 0) return new Map()
  const rows = await db.selectFrom('profiles').select(representation).where('user_id', 'in', [...new Set(userIds)]).execute()
  return new Map(rows.map((row) => [row.user_id, row]))
}
