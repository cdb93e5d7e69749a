// The query both reference servers (baseline.ts, floor.ts) answer with: the first page of 20 users,
// a named prepared keyset statement on a `pg` pool that hands ids out as numbers, as the API's does.
import pg from 'pg'

export const LIMIT = 20
const INT8 = 20

export function referencePool (): pg.Pool {
  return new pg.Pool({
    connectionString: process.env.DATABASE_URL,
    max: Number(process.env.POOL_SIZE ?? 20),
    types: { getTypeParser: ((oid: number, format?: 'text' | 'binary') => oid === INT8 ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser }
  })
}

export interface UserRow { id: number, name: string, email: string, created_at: Date }

/** `{data, pagination}` of the first page, as the API shapes it (the cursor is the last id). */
export async function firstPage (pool: pg.Pool, statementName: string) {
  const { rows } = await pool.query<UserRow>({
    name: statementName,
    text: 'select id, name, email, created_at from users where id > $1 order by id limit $2',
    values: [0, LIMIT + 1]
  })
  const hasMore = rows.length > LIMIT
  const data = rows.slice(0, LIMIT)
  return { data, pagination: { hasMore, nextCursor: hasMore ? String(data[data.length - 1]?.id) : null, limit: LIMIT } }
}
