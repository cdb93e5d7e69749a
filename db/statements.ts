import { CompiledQuery, type Compilable } from 'kysely'

/** Where the value at `index` goes, in a statement compiled before the values are known. */
class Slot {
  constructor (readonly index: number) {}
}

interface Template {
  sql: string
  parameters: readonly unknown[]
}

/** Shapes kept per list; past this, a new shape is compiled for its request alone. */
export const MAX_SHAPES = 256

/**
 * The statements of a list change shape (filters present, sort, columns, paging mode) far less
 * often than values, and building and compiling one with Kysely costs more CPU than running it on
 * a warm connection. So each shape is built once with slots for its values, and every request of
 * that shape only fills them in. `build` must use its values as parameters only, never look at
 * them: whatever would change the text belongs in `key`.
 */
export class ShapedStatements {
  readonly #templates = new Map<string, Template>()

  compile (key: string, values: readonly unknown[], build: (values: readonly unknown[]) => Compilable<unknown> | CompiledQuery<unknown>): CompiledQuery<unknown> {
    let template = this.#templates.get(key)
    if (template === undefined) {
      const built = build(values.map((_, index) => new Slot(index)))
      template = 'compile' in built ? built.compile() : built
      if (this.#templates.size < MAX_SHAPES) this.#templates.set(key, template)
    }
    const parameters = template.parameters.map((p) => p instanceof Slot ? values[p.index] : p)
    return CompiledQuery.raw(template.sql, parameters)
  }

  get size (): number {
    return this.#templates.size
  }
}
