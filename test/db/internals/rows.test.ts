import { isDeepStrictEqual } from 'node:util'
import fc from 'fast-check'
import pg from 'pg'
import t from 'tap'
import { describes, rowShape } from '../../../db/internals/rows.js'

type Parser = (text: string) => unknown

const field = (name: string, dataTypeID = 25, format = 'text'): pg.FieldDef =>
  ({ name, tableID: 0, columnID: 0, dataTypeID, dataTypeSize: -1, dataTypeModifier: -1, format })

// Parsers that tell columns apart, so that a value parsed by another column's parser shows.
const parsers: Record<number, Parser> = {
  20: (text) => Number(text),
  25: (text) => text,
  16: (text) => text === 't',
  1184: (text) => new Date(Date.parse(text) || 0)
}
const parserOf = (oid: number): Parser => parsers[oid] ?? ((text) => `oid ${oid}: ${text}`)

/** The row pg itself makes from the same description and values. */
function pgRow (fields: pg.FieldDef[], values: Array<string | null>): Record<string, unknown> {
  const types = { getTypeParser: parserOf } as unknown as typeof pg.types
  const result = new pg.Result('object', types) as unknown as {
    addFields: (fields: pg.FieldDef[]) => void
    parseRow: (values: Array<string | null>) => Record<string, unknown>
  }
  result.addFields(fields)
  return result.parseRow(values)
}

const NAMES = ['id', 'name', '', ' ', '"', "'", '\\', '`', '$' + '{x}', '}', '\n', '\u2028', '\u0000', '💥', 'constructor',
  'toString', 'hasOwnProperty', '0', '1', '-1', '01', '4294967295', 'a.b', 'return', 'null', 'v', 'p']

t.test('a shaped row is the row pg makes: same properties, order, values and prototype', async (t) => {
  const name = fc.oneof(fc.constantFrom(...NAMES), fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 6 }))
    .filter((n) => n !== '__proto__')
  const column = fc.record({ name, oid: fc.constantFrom(20, 25, 16, 1184, 700) })
  const value = fc.option(fc.oneof(fc.string({ maxLength: 10 }), fc.constantFrom('t', 'f', '42', '2026-11-22 10:00:00+00')), { nil: null })
  t.doesNotThrow(() => fc.assert(fc.property(
    fc.array(column, { minLength: 1, maxLength: 8 }).chain((columns) =>
      fc.tuple(fc.constant(columns), fc.array(value, { minLength: columns.length, maxLength: columns.length }))),
    ([columns, values]) => {
      const fields = columns.map((c) => field(c.name, c.oid))
      const shape = rowShape(fields, parserOf)
      if (shape === undefined) return false
      const ours = shape.build(values, shape.parsers)
      const theirs = pgRow(fields, values)
      return isDeepStrictEqual(ours, theirs) && Object.getPrototypeOf(ours) === Object.getPrototypeOf(theirs) &&
        JSON.stringify(Object.keys(ours)) === JSON.stringify(Object.keys(theirs))
    }
  ), { numRuns: 500 }), 'random columns (duplicates, quotes, line separators, numeric names) and values')

  const twice = rowShape([field('id', 20), field('id', 25)], parserOf)
  t.same(twice?.build(['1', 'one'], twice.parsers), { id: 'one' }, 'of two columns of one name the later wins, as in pg')
})

t.test('rows pg must make itself, and descriptions that no longer fit a shape', async (t) => {
  t.equal(rowShape([field('__proto__')], parserOf), undefined, 'a column named __proto__ (a literal would set the prototype)')
  t.equal(rowShape([field('id', 20, 'binary')], parserOf), undefined, 'a binary column')
  t.equal(rowShape([], parserOf), undefined, 'no columns')

  const shape = rowShape([field('id', 20), field('name')], parserOf)
  if (shape === undefined) throw new Error('expected a shape')
  t.ok(describes(shape, [field('id', 20), field('name')]), 'the same columns and types')
  t.notOk(describes(shape, [field('id', 20)]), 'a column fewer')
  t.notOk(describes(shape, [field('id', 20), field('title')]), 'another name')
  t.notOk(describes(shape, [field('id', 23), field('name')]), 'another type')
  t.notOk(describes(shape, [field('id', 20), field('name', 25, 'binary')]), 'a binary column')
})
