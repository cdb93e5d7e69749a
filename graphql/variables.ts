import {
  GraphQLError, Kind, getOperationAST, isEnumType, isInputObjectType, isInputType, isListType, isNonNullType,
  isScalarType, isSpecifiedScalarType, parse, typeFromAST, type DocumentNode, type GraphQLInputType, type GraphQLSchema,
  type OperationDefinitionNode
} from 'graphql'
import { MAX_DOCUMENT_TOKENS } from './documents.js'
import { codes } from './errors.js'

/** Errors one request's variables are answered with at most (and one more saying there were others). */
export const MAX_VARIABLE_ERRORS = 10

/** Levels of input objects and lists a value is followed into; deeper is refused (recursive input types). */
export const MAX_VARIABLE_DEPTH = 32

/** Documents whose operations are kept parsed, and the characters of their text in all. */
const CACHED_DOCUMENTS = 1000
const CACHED_CHARACTERS = 8 * 1024 * 1024

/** A key quoted in a message only when it is a GraphQL name of a sensible length. */
const SAFE_KEY = /^[_A-Za-z][_0-9A-Za-z]{0,63}$/

/** What the built-in scalars take as variables (graphql-js's and graphql-jit's own rules). */
const BUILT_IN_SCALARS: Record<string, { takes: (value: unknown) => boolean, expected: string }> = {
  Int: { takes: (v) => Number.isInteger(v) && (v as number) <= 2147483647 && (v as number) >= -2147483648, expected: 'a 32-bit integer' },
  Float: { takes: (v) => typeof v === 'number' && Number.isFinite(v), expected: 'a finite number' },
  String: { takes: (v) => typeof v === 'string', expected: 'a string' },
  Boolean: { takes: (v) => typeof v === 'boolean', expected: 'true or false' },
  // An integer beyond 2^53 was already rounded by the JSON parser: it would name another row's key.
  ID: { takes: (v) => typeof v === 'string' || Number.isSafeInteger(v), expected: 'a string, or an integer of at most 2^53 - 1 (send a larger one as a string)' }
}

/** UTF-8 bytes of `text`: counted here for short texts (keys, most values), where a call into Buffer costs more. */
function utf8Bytes (text: string): number {
  if (text.length > 256) return Buffer.byteLength(text, 'utf8')
  let bytes = text.length
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    // 2 bytes up to U+07FF, 3 for the rest of the BMP, 4 for a surrogate pair (2 units).
    if (unit > 0x7f) bytes += unit > 0x7ff && (unit < 0xd800 || unit > 0xdfff) ? 2 : 1
  }
  return bytes
}

/**
 * The size of `value` written as JSON, in UTF-8 bytes (escapes aside), or `limit + 1` as soon as it
 * is larger: a walk with a stack of its own, so that neither depth nor width costs more than the limit.
 */
export function jsonBytes (value: unknown, limit: number): number {
  let bytes = 0
  const stack: unknown[] = [value]
  while (stack.length > 0 && bytes <= limit) {
    const item = stack.pop()
    if (typeof item === 'string') {
      bytes += utf8Bytes(item) + 2
    } else if (typeof item === 'number' || typeof item === 'boolean') {
      bytes += String(item).length
    } else if (Array.isArray(item)) {
      bytes += item.length === 0 ? 2 : 1 + item.length // brackets and commas
      for (const element of item) stack.push(element)
    } else if (item !== null && typeof item === 'object') {
      const keys = Object.keys(item)
      bytes += keys.length === 0 ? 2 : 1 // braces, less the last comma counted below
      for (const key of keys) {
        bytes += utf8Bytes(key) + 4 // quotes, colon, comma
        stack.push((item as Record<string, unknown>)[key])
      }
    } else {
      bytes += 4 // null
    }
  }
  return bytes > limit ? limit + 1 : bytes
}

/** The errors of one request's variables, at most MAX_VARIABLE_ERRORS of them (and one saying so). */
class Errors {
  readonly list: GraphQLError[] = []
  /** No more are reported: the walk stops. */
  full = false

  add (message: string, field: string): void {
    if (this.full) return
    if (this.list.length === MAX_VARIABLE_ERRORS) {
      this.list.push(new GraphQLError(`the variables have more errors: only the first ${MAX_VARIABLE_ERRORS} are reported`, { extensions: { code: codes.badUserInput } }))
      this.full = true
      return
    }
    this.list.push(new GraphQLError(message, { extensions: { code: codes.badUserInput, field } }))
  }
}

/**
 * Checks one variable's value against its type as graphql-js and graphql-jit coerce it (a value
 * for a list is a list of one), but without coercing, quoting no value, and stopping at
 * MAX_VARIABLE_ERRORS: input objects take their fields only (every required one), lists their
 * items, enums the names of their values, scalars what they parse.
 */
function checkValue (errors: Errors, variable: string, type: GraphQLInputType, value: unknown, path: string, depth: number): void {
  if (errors.full) return
  const invalid = (reason: string, at = path) => { errors.add(`Variable "$${variable}" got an invalid value at "${at}": ${reason}.`, at) }
  if (isNonNullType(type)) {
    if (value === null || value === undefined) {
      invalid(`expected a value of type "${String(type)}", not null`)
      return
    }
    checkValue(errors, variable, type.ofType, value, path, depth)
    return
  }
  if (value === null || value === undefined) return
  // Only a recursive input type can nest without end; it is followed this far.
  if (depth > MAX_VARIABLE_DEPTH && (isListType(type) || isInputObjectType(type))) {
    invalid(`nested more than ${MAX_VARIABLE_DEPTH} levels deep`)
    return
  }
  if (isListType(type)) {
    if (!Array.isArray(value)) {
      checkValue(errors, variable, type.ofType, value, path, depth + 1)
      return
    }
    for (let index = 0; index < value.length && !errors.full; index++) {
      checkValue(errors, variable, type.ofType, value[index], `${path}[${index}]`, depth + 1)
    }
    return
  }
  if (isInputObjectType(type)) {
    if (typeof value !== 'object' || Array.isArray(value)) {
      invalid(`expected an object of type "${type.name}"`)
      return
    }
    const given = value as Record<string, unknown>
    const fields = type.getFields()
    for (const key of Object.keys(given)) {
      if (errors.full) return
      if (!Object.hasOwn(fields, key)) invalid(SAFE_KEY.test(key) ? `field "${key}" is not defined by type "${type.name}"` : `a field is not defined by type "${type.name}"`)
    }
    if (type.isOneOf) {
      const keys = Object.keys(given)
      if (keys.length !== 1 || given[keys[0] as string] === null) invalid(`exactly one field of "${type.name}" must be given, and not null`)
    }
    for (const [name, field] of Object.entries(fields)) {
      if (errors.full) return
      const fieldValue = Object.hasOwn(given, name) ? given[name] : undefined
      if (fieldValue === undefined) {
        if (isNonNullType(field.type) && field.defaultValue === undefined) invalid(`the required field "${name}" of type "${String(field.type)}" was not given`, `${path}.${name}`)
        continue
      }
      checkValue(errors, variable, field.type, fieldValue, `${path}.${name}`, depth + 1)
    }
    return
  }
  if (isEnumType(type)) {
    if (typeof value !== 'string' || type.getValue(value) === undefined) invalid(`expected a value of the enum "${type.name}"`)
    return
  }
  if (isScalarType(type)) {
    const builtIn = isSpecifiedScalarType(type) ? BUILT_IN_SCALARS[type.name] : undefined
    if (builtIn !== undefined) {
      if (!builtIn.takes(value)) invalid(`expected ${builtIn.expected} (${type.name})`)
      return
    }
    // A scalar of the schema's own: what its parseValue takes (its message may quote the value: not used).
    let parsed: unknown
    try { parsed = type.parseValue(value) } catch { parsed = undefined }
    if (parsed === undefined || Number.isNaN(parsed)) invalid(`expected a valid ${type.name}`)
  }
}

export interface VariableCheckOptions {
  /** Bytes the variables may take as JSON. @example 524288 */
  maxBytes: number
}

/**
 * Checks a request's variables against the variable types of the operation it runs, before
 * graphql-js or graphql-jit coerces them: their size as JSON first (`maxBytes`), then a walk of
 * each value along its type. Answers at most MAX_VARIABLE_ERRORS errors (BAD_USER_INPUT, `field`
 * the path in the variables), none of which quotes a value or a client's long key. A document
 * that does not parse, an unknown operation or an unknown type is left to graphql-js, which
 * refuses it before coercing anything.
 */
export class VariableCheck {
  readonly #maxBytes: number
  // Each document's operations, parsed without locations, the most recently used last.
  readonly #operations = new Map<string, readonly OperationDefinitionNode[] | null>()
  #characters = 0

  constructor (options: VariableCheckOptions) {
    if (!Number.isSafeInteger(options.maxBytes) || options.maxBytes < 1) throw new Error('maxBytes must be a positive integer')
    this.#maxBytes = options.maxBytes
  }

  /** The refusal of these variables (errors to answer), or undefined when they fit. */
  check (schema: GraphQLSchema, source: string, variables: unknown, operationName: unknown): GraphQLError[] | undefined {
    if (variables === null || typeof variables !== 'object' || Array.isArray(variables)) return undefined
    if (Object.keys(variables).length === 0) return undefined
    if (jsonBytes(variables, this.#maxBytes) > this.#maxBytes) {
      return [new GraphQLError(`the variables are larger than ${this.#maxBytes} bytes`, { extensions: { code: codes.badUserInput, maximum: this.#maxBytes } })]
    }
    const operation = this.#operation(source, typeof operationName === 'string' ? operationName : undefined)
    if (operation === undefined) return undefined
    const given = variables as Record<string, unknown>
    const errors = new Errors()
    for (const definition of operation.variableDefinitions ?? []) {
      if (errors.full) break
      const name = definition.variable.name.value
      const type = typeFromAST(schema, definition.type)
      if (type === undefined || !isInputType(type)) continue
      const value = Object.hasOwn(given, name) ? given[name] : undefined
      if (value === undefined) {
        if (isNonNullType(type) && definition.defaultValue === undefined) errors.add(`Variable "$${name}" of required type "${String(type)}" was not provided.`, name)
      } else if (value === null && isNonNullType(type)) {
        errors.add(`Variable "$${name}" of non-null type "${String(type)}" must not be null.`, name)
      } else {
        checkValue(errors, name, type, value, name, 0)
      }
    }
    return errors.list.length === 0 ? undefined : errors.list
  }

  /** The operation `name` picks in `source` (parsed once per document), or undefined. */
  #operation (source: string, name: string | undefined): OperationDefinitionNode | undefined {
    let operations = this.#operations.get(source)
    if (operations === undefined) {
      operations = operationsOf(source)
      this.#remember(source, operations)
    } else {
      // Most recently used last.
      this.#operations.delete(source)
      this.#operations.set(source, operations)
    }
    if (operations === null) return undefined
    return getOperationAST({ kind: Kind.DOCUMENT, definitions: operations } satisfies DocumentNode, name) ?? undefined
  }

  #remember (source: string, operations: readonly OperationDefinitionNode[] | null): void {
    this.#operations.set(source, operations)
    this.#characters += source.length
    for (const [oldest] of this.#operations) {
      if (this.#operations.size <= CACHED_DOCUMENTS && this.#characters <= CACHED_CHARACTERS) break
      this.#operations.delete(oldest)
      this.#characters -= oldest.length
    }
  }
}

/** The operations of a document, or null when it does not parse (graphql-js then says why). */
function operationsOf (source: string): readonly OperationDefinitionNode[] | null {
  try {
    const document = parse(source, { maxTokens: MAX_DOCUMENT_TOKENS, noLocation: true })
    return document.definitions.filter((definition): definition is OperationDefinitionNode => definition.kind === Kind.OPERATION_DEFINITION)
  } catch {
    return null
  }
}
