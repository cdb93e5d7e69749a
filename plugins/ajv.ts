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
