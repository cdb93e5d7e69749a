import type { TSchema } from '@sinclair/typebox'
import type { ValidateFunction } from 'ajv'
import { createAjv } from '../plugins/ajv.js'
import { toErrorResponse } from '../plugins/errors.js'
import { badRequest } from '../schema/errors.js'

// Inputs checked against the resource style's own body schemas wherever they come from (a GraphQL
// input, a host's own code), so that every way in accepts and refuses the same values (lengths,
// email format) with the same messages.
const ajv = createAjv(false)
const compiled = new WeakMap<TSchema, ValidateFunction>()

/** Checks an input object against a REST body schema: a 400 (GraphQL's BAD_USER_INPUT) naming the field otherwise. */
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
