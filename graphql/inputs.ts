import type { TSchema } from '@sinclair/typebox'
import type { ValidateFunction } from 'ajv'
import { badRequest } from '../schema/errors.js'
import { createAjv } from '../plugins/ajv.js'
import { toErrorResponse } from '../plugins/errors.js'
import { DEFAULT_LIST_SIZE, MAX_LIST_SIZE } from './limits.js'

// GraphQL inputs are checked against the resource style's own body schemas, so that both
// styles accept and refuse the same values (lengths, email format) with the same messages.
const ajv = createAjv(false)
const compiled = new WeakMap<TSchema, ValidateFunction>()

/** Checks an input object against a REST body schema; BAD_USER_INPUT naming the field otherwise. */
export function checkInput<T> (schema: TSchema, value: Record<string, unknown>): T {
  let validate = compiled.get(schema)
  if (validate === undefined) {
    validate = ajv.compile(schema)
    compiled.set(schema, validate)
  }
  // GraphQL hands over null for an optional field sent as null; the body schemas know only "absent".
  const input = Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined))
  if (!validate(input)) {
    const { body } = toErrorResponse(Object.assign(new Error('invalid input'), { validation: validate.errors ?? [], validationContext: 'body' }))
    throw badRequest(body.error, body.field)
  }
  return input as T
}

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
