import { badRequest } from '../schema/errors.js'
import { DEFAULT_LIST_SIZE, MAX_LIST_SIZE } from './limits.js'

export { checkInput } from '../rules/checked-input.js'

/** An `ID` argument: the decimal text of a positive integer id. */
export function parseId (value: unknown, field: string): number {
  const text = typeof value === 'number' ? String(value) : value
  if (typeof text !== 'string' || !/^[1-9]\d{0,15}$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw badRequest(`${field} must be a positive integer id`, field)
  }
  return Number(text)
}

/** A nested list's `limit`: 1–100, default 20. */
export function listLimit (value: unknown, field = 'limit'): number {
  if (value === undefined || value === null) return DEFAULT_LIST_SIZE
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_LIST_SIZE) {
    throw badRequest(`${field} must be an integer from 1 to ${MAX_LIST_SIZE}`, field)
  }
  return value
}
