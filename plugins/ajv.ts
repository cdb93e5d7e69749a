import type { FastifySchemaCompiler } from 'fastify'
import { Ajv, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'

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
  return ajv
}

const textAjv = createAjv(true)
const bodyAjv = createAjv(false)

/** Query strings and params are text and coerced; JSON bodies are validated as sent. */
export const validatorCompiler: FastifySchemaCompiler<object> = ({ schema, httpPart }) => {
  const validate = (httpPart === 'body' ? bodyAjv : textAjv).compile(schema)
  return validate as ReturnType<FastifySchemaCompiler<object>>
}
