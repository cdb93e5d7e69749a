import { isDeepStrictEqual } from 'node:util'

/** Where the value at `index` goes, in a statement compiled before the values are known. */
class Slot {
  constructor (readonly index: number) {}
}

interface Compiled {
  readonly sql: string
  readonly parameters: readonly unknown[]
}

/** One placeholder per value, to build a statement with before its values are known. */
export const placeholders = (count: number): unknown[] => Array.from({ length: count }, (_, index) => new Slot(index))

/**
 * A template's parameters with its placeholders replaced by `values`. This relies on Kysely
 * carrying a parameter's object from the builder to `CompiledQuery.parameters` untouched, which
 * it does without documenting it: `fillsLike` checks it for every template.
 */
export const fill = (parameters: readonly unknown[], values: readonly unknown[]): unknown[] =>
  parameters.map((parameter) => parameter instanceof Slot ? values[parameter.index] : parameter)

/**
 * Whether `template`, compiled over placeholders, filled with `values` is `direct`, the same
 * statement compiled from the values themselves: the same text and equal parameters.
 */
export const fillsLike = (template: Compiled, direct: Compiled, values: readonly unknown[]): boolean =>
  template.sql === direct.sql && isDeepStrictEqual(fill(template.parameters, values), direct.parameters)
