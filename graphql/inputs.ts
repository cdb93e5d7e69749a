import { badRequest } from '../schema/errors.js'
import { DEFAULT_LIST_SIZE, MAX_LIST_SIZE } from './limits.js'

export { checkInput } from '../rules/checked-input.js'

/** A nested list's `limit`: 1–100, default 20. */
export function listLimit (value: unknown, field = 'limit'): number {
  if (value === undefined || value === null) return DEFAULT_LIST_SIZE
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_LIST_SIZE) {
    throw badRequest(`${field} must be an integer from 1 to ${MAX_LIST_SIZE}`, field)
  }
  return value
}

/**
 * An `orderBy` argument (`[DUE_ON_DESC]`, values of the resource's `…OrderBy` enum, mapped by `values`
 * to REST's `sort`) as REST's `sort` (`-due_on`); undefined for the default (ascending id). Lists are
 * sorted by one field, ties broken by id in its direction: `[DUE_ON_DESC, ID_DESC]` says the same, any
 * other second value is refused (BAD_USER_INPUT on `orderBy`).
 */
export function sortOf (orderBy: unknown, values: ReadonlyMap<string, string>): string | undefined {
  if (orderBy === undefined || orderBy === null) return undefined
  const given = (Array.isArray(orderBy) ? orderBy : [orderBy]).map((value) => values.get(String(value)))
  const [sort, tie, ...rest] = given
  if (given.some((value) => value === undefined)) throw badRequest('orderBy takes the values of its enum', 'orderBy')
  if (sort === undefined) return undefined
  const descending = sort.startsWith('-')
  if (rest.length > 0 || (tie !== undefined && (sort === 'id' || sort === '-id' || tie !== (descending ? '-id' : 'id')))) {
    throw badRequest(`lists are sorted by one field, ties broken by id in the same direction: orderBy takes one value, or one and ID_${descending ? 'DESC' : 'ASC'}`, 'orderBy')
  }
  return sort
}
