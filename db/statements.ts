import { CompiledQuery, sql, type Compilable } from 'kysely'
import { fill, fillsLike, placeholders, placeholdersDiffered, placeholdersHold } from './internals/index.js'

interface Template {
  sql: string
  parameters: readonly unknown[]
}

// A shape whose template did not fill in as Kysely compiles it: compiled per request.
const PER_REQUEST = 'per request'

/** Shapes kept per list; past this, a new shape is compiled for its request alone. */
export const MAX_SHAPES = 256

/** Distinct limits (or sets of limits) a shape writes into its text; past these, they are parameters. */
export const LITERAL_LIMITS = 8

type Build = (values: readonly unknown[]) => Compilable<unknown> | CompiledQuery<unknown>
const compiled = (built: Compilable<unknown> | CompiledQuery<unknown>): CompiledQuery<unknown> => 'compile' in built ? built.compile() : built

/**
 * The statements of a list change shape (filters present, sort, columns, paging mode) far less
 * often than values, and building and compiling one with Kysely costs more CPU than running it on
 * a warm connection. So each shape is built once with placeholders for its values, and every
 * request of that shape only fills them in. `build` must use its values as parameters only, never
 * look at them: whatever would change the text belongs in `key`. A shape's first request also
 * compiles the statement from its values, and the shape keeps its template only when the two agree
 * (db/internals: Kysely does not document that it carries placeholders through). See
 * PERFORMANCE-DECISIONS.md, 'List and relation statements compiled once per shape'.
 */
export class ShapedStatements {
  readonly #templates = new Map<string, Template | typeof PER_REQUEST>()
  readonly #literalLimits = new Map<string, Set<string>>()

  compile (key: string, values: readonly unknown[], build: Build): CompiledQuery<unknown> {
    const template = this.#templates.get(key)
    if (template === undefined) {
      const direct = compiled(build(values))
      if (this.#templates.size < MAX_SHAPES) this.#templates.set(key, ShapedStatements.#templateOf(values, build, direct))
      return direct
    }
    if (template === PER_REQUEST) return compiled(build(values))
    return CompiledQuery.raw(template.sql, fill(template.parameters, values))
  }

  static #templateOf (values: readonly unknown[], build: Build, direct: CompiledQuery<unknown>): Template | typeof PER_REQUEST {
    if (!placeholdersHold()) return PER_REQUEST
    const template = compiled(build(placeholders(values.length)))
    if (fillsLike(template, direct, values)) return template
    placeholdersDiffered()
    return PER_REQUEST
  }

  /**
   * `compile` for a statement with limits (`limit 21`), which `build` receives apart from the other
   * values: each is either the number itself, to be written into the text, or its slot.
   *
   * PostgreSQL plans a prepared statement anew at every execution while its LIMIT is a parameter: a
   * generic plan has to assume the limit lets through a tenth of the table, so it never looks as cheap
   * as one planned for the value, and planning a page's select costs its server more than running it.
   * With the limit in the text the generic plan is the plan, and each connection keeps it. Clients
   * page with one or two limits, so each shape writes the first `LITERAL_LIMITS` it meets into its
   * text; past them a new limit is a parameter, so that what a connection prepares stays bounded
   * whatever limits are asked. See PERFORMANCE-DECISIONS.md, 'Limits written into statements'.
   */
  compileLimited (
    shape: string,
    values: readonly unknown[],
    limits: readonly number[],
    build: (values: readonly unknown[], limits: readonly unknown[]) => Compilable<unknown> | CompiledQuery<unknown>
  ): CompiledQuery<unknown> {
    if (!this.#writesLimits(shape, limits)) {
      return this.compile(`${shape}|$`, [...values, ...limits], (slots) => build(slots.slice(0, values.length), slots.slice(values.length)))
    }
    return this.compile(`${shape}|${limits.join(',')}`, values, (slots) => build(slots, limits.map((limit) => sql.lit(limit))))
  }

  #writesLimits (shape: string, limits: readonly number[]): boolean {
    // Only integers are ever written into a text.
    if (!limits.every((limit) => Number.isSafeInteger(limit))) return false
    const written = limits.join(',')
    let seen = this.#literalLimits.get(shape)
    if (seen === undefined) {
      if (this.#literalLimits.size >= MAX_SHAPES) return false
      this.#literalLimits.set(shape, seen = new Set())
    }
    if (seen.has(written)) return true
    if (seen.size >= LITERAL_LIMITS) return false
    seen.add(written)
    return true
  }

  get size (): number {
    return this.#templates.size
  }
}
