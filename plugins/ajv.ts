import type { FastifySchemaCompiler } from 'fastify'
import { Ajv, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { isInt64Text } from '../schema/keys.js'

// ajv-formats is CommonJS; under NodeNext its default export arrives wrapped.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv

/**
 * Builds the Ajv instance Tandem validates with. Query strings, params and the environment are
 * text, so they are coerced; bodies are JSON and are not (`"age": "3"` stays a string and fails).
 */
export function createAjv (coerce: boolean, extra: Options = {}): Ajv {
  const ajv = new Ajv({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    removeAdditional: false,
    allErrors: false,
    strict: false,
    ...extra
  })
  addFormats(ajv)
  // A bigint as JSON text (`Type.String({ format: 'int64' })`: a bigint key), exact beyond 2^53;
  // ajv-formats' int64 is for numbers, which cannot hold such a value.
  ajv.addFormat('int64', { type: 'string', validate: isInt64Text })
  return ajv
}

const textAjv = createAjv(true)
const bodyAjv = createAjv(false)

type Validate = ReturnType<FastifySchemaCompiler<object>>

// Ajv reuses what it compiled for the same schema object only; Fastify hands it a copy of a route's
// headers schema, and a declaration's schemas are remade by each application: compiled functions are
// kept by the schema's JSON too (the same for every application of the process, as the instances are).
const compiled = { body: new Map<string, Validate>(), text: new Map<string, Validate>() }

/** Query strings and params are text and coerced; JSON bodies are validated as sent. */
export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  const kind = httpPart === 'body' ? 'body' : 'text'
  const text = JSON.stringify(schema)
  const known = compiled[kind].get(text)
  if (known !== undefined) return known
  const validate = (kind === 'body' ? bodyAjv : textAjv).compile(schema) as Validate
  compiled[kind].set(text, validate)
  return validate
}
