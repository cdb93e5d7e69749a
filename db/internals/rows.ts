import type { FieldDef } from 'pg'

type Parser = (text: string) => unknown
type Row = Record<string, unknown>
type Build = (values: ReadonlyArray<string | null>, parsers: readonly Parser[]) => Row

/** How a prepared statement's rows are made: checked against each RowDescription, built by `build`. */
export interface RowShape {
  fields: readonly FieldDef[]
  parsers: readonly Parser[]
  build: Build
}

// Builders depend on the column names only: statements of the same columns share one.
const MAX_BUILDERS = 1_024
const builders = new Map<string, Build>()

/**
 * A function that makes a row as one object literal. pg builds every row by copying a template
 * object and storing each column by name: in a server running many statements both sites see every
 * table's shape and fall back to V8's slowest paths. Made from the columns' names only (quoted by
 * `JSON.stringify`), the literal gives each statement's rows one fixed layout, in pg's column order,
 * a later column of the same name winning as in pg. See PERFORMANCE-DECISIONS.md, 'Rows built by
 * generated builders'.
 */
function builderFor (names: readonly string[]): Build | undefined {
  // In a literal `"__proto__": v` would set the prototype instead of making a property.
  if (names.includes('__proto__')) return undefined
  const key = JSON.stringify(names)
  let build = builders.get(key)
  if (build === undefined) {
    const properties = names.map((name, i) => `${JSON.stringify(name)}: v[${i}] === null ? null : p[${i}](v[${i}])`)
    // eslint-disable-next-line no-new-func -- generated from quoted column names only
    build = new Function('v', 'p', `'use strict'\nreturn { ${properties.join(', ')} }`) as Build
    if (builders.size < MAX_BUILDERS) builders.set(key, build)
  }
  return build
}

/** The shape of rows described by `fields`, or undefined when pg's own way must make them. */
export function rowShape (fields: readonly FieldDef[], parserOf: (oid: number) => Parser): RowShape | undefined {
  if (fields.length === 0 || fields.some((field) => field.format !== 'text')) return undefined
  const build = builderFor(fields.map((field) => field.name))
  if (build === undefined) return undefined
  return { fields, parsers: fields.map((field) => parserOf(field.dataTypeID)), build }
}

/** Whether a statement's RowDescription still has the columns and types its shape was made for. */
export function describes (shape: RowShape, fields: readonly FieldDef[]): boolean {
  if (shape.fields.length !== fields.length) return false
  for (let i = 0; i < fields.length; i++) {
    const a = shape.fields[i] as FieldDef
    const b = fields[i] as FieldDef
    if (a.name !== b.name || a.dataTypeID !== b.dataTypeID || b.format !== 'text') return false
  }
  return true
}
