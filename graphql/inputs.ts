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
