// The users' list as the data layer reads it (db/resource.ts, from the users' declaration): what the
// pagination tests page through, with the filters a request gives by name.
import type { Db } from '../../db/connect.js'
import type { ListContext, ListPage, ListParams, Row } from '../../db/pagination.js'
import { resourceData } from '../../db/resource.js'
import { users } from '../../rules/users.js'

const data = resourceData(users)

export interface UserFilters {
  email?: string | undefined
  name?: string | undefined
  q?: string | undefined
}

const filtersOf = (given: UserFilters): Record<string, unknown> =>
  Object.fromEntries(Object.entries(given).filter(([, value]) => value !== undefined))

/** A page of users as `GET /users` reads it (no field rule: every email). */
export async function listUsers (db: Db, params: ListParams & UserFilters, context: Omit<ListContext, 'filters'>): Promise<ListPage> {
  const { email, name, q, ...list } = params
  return await data.page(db, list, { ...context, filters: filtersOf({ email, name, q }) })
}

/** Users in id order from `offset` on, without a cursor or a count (GraphQL's `users`). */
export async function userRows (db: Db, params: { limit?: number, offset?: number }): Promise<Row[]> {
  return await data.rows(db, params, {})
}
