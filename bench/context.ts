import { PRODUCTS_PAGE } from './cases.js'
import { ADMIN } from './settings.js'

interface KeysetPage { data: Array<{ id: number }>, pagination: { hasMore: boolean, nextCursor: string | null } }

async function call<T> (origin: string, path: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(origin + path, init)
  const body = await response.text()
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${path}: ${response.status} ${body.slice(0, 300)}`)
  return JSON.parse(body) as T
}

export async function login (origin: string): Promise<string> {
  const { accessToken } = await call<{ accessToken: string }>(origin, '/api/v1/auth/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN)
  })
  return accessToken
}

/**
 * A real cursor deep in `GET /users`: the list is walked 100 ids at a time (`fields=id`, which
 * cursors do not depend on) until 95 % of `users` rows lie behind it. Cheaper than paging 20 at a
 * time, and the cursor is the server's own, signed as any client would receive it.
 */
export async function deepCursor (origin: string, token: string, users: number): Promise<{ cursor: string, pages: number, ms: number }> {
  const started = performance.now()
  const headers = { authorization: `Bearer ${token}` }
  const pages = Math.max(1, Math.floor(users * 0.95 / 100))
  let cursor: string | null = null
  for (let n = 0; n < pages; n++) {
    const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`
    const page: KeysetPage = await call<KeysetPage>(origin, `/api/v1/users?limit=100&fields=id${query}`, { headers })
    if (page.pagination.nextCursor === null) break
    cursor = page.pagination.nextCursor
  }
  if (cursor === null) throw new Error('GET /users has a single page: no deep cursor to measure')
  return { cursor, pages, ms: Math.round(performance.now() - started) }
}

/** The `nextCursor` of one page, as a client paging on would send it. */
async function nextCursorOf (origin: string, path: string, init: RequestInit = {}): Promise<string> {
  const page = await call<KeysetPage>(origin, path, init)
  if (page.pagination.nextCursor === null) throw new Error(`GET ${path} has a single page: no next page to measure`)
  return page.pagination.nextCursor
}

/** The cursor of the second page of `GET /users?limit=20`, 20 rows in. */
export const secondCursor = (origin: string, token: string): Promise<string> =>
  nextCursorOf(origin, '/api/v1/users?limit=20', { headers: { authorization: `Bearer ${token}` } })

export const productsCursor = (origin: string): Promise<string> => nextCursorOf(origin, PRODUCTS_PAGE)
