// defineResource's filters with operators, fields with defaults and emptyPatch: what a declaration
// derives from them, and the mistakes it refuses at start.
import t from 'tap'
import { createAjv } from '../../plugins/ajv.js'
import { defineResource, Type } from '../../index.js'

const representation = Type.Object({
  id: Type.Integer(),
  title: Type.String(),
  pages: Type.Integer({ minimum: 0, default: 100 }),
  rating: Type.Union([Type.Number(), Type.Null()]),
  published_at: Type.String({ format: 'date-time' })
})
const book = { name: 'book', table: 'books', representation, generated: ['id'] as Array<'id'>, writable: ['title', 'pages', 'rating', 'published_at'] as Array<'title' | 'pages' | 'rating' | 'published_at'> }

/** The value as a validator of this schema leaves it (defaults filled in), or the first error's field. */
function validated (schema: object, value: Record<string, unknown>, coerce = false): Record<string, unknown> | string {
  const validate = createAjv(coerce).compile(schema)
  const copy = { ...value }
  return validate(copy) ? copy : String(validate.errors?.[0]?.params?.missingProperty ?? validate.errors?.[0]?.instancePath ?? '')
}

t.test('a field with a default may be left out of a create only; PATCH, filters and answers never fill it in', async (t) => {
  const books = defineResource({ ...book, filters: ['pages'] })
  t.same(validated(books.schemas.create, { title: 'Emma', published_at: '1815-12-23T00:00:00Z' }), { title: 'Emma', published_at: '1815-12-23T00:00:00Z', pages: 100 })
  t.equal(validated(books.schemas.replace, { title: 'Emma', rating: null, published_at: '1815-12-23T00:00:00Z' }), 'pages', 'a PUT must give it')
  t.same(validated(books.schemas.patch, { title: 'Persuasion' }), { title: 'Persuasion' }, 'a PATCH does not reset it')
  t.same(validated(books.schemas.listQuery, {}, true), {}, 'an equality filter on it is not applied unasked')
  t.notOk('default' in (books.schemas.item.properties.pages as object), 'an answer does not invent it')
})

t.test('filters by name: ranges, positive, and their query parameters', async (t) => {
  const books = defineResource({
    ...book,
    filters: {
      title: { field: 'title' },
      pages_min: { field: 'pages', op: '>=' },
      pages_max: { field: 'pages', op: '<', description: 'Fewer pages than this.' },
      since: { field: 'published_at', op: '>=' },
      rated: { field: 'rating', op: 'positive' }
    }
  })
  t.same(books.filters.map(({ name, field, op }) => `${name}:${field}${op}`), ['title:title=', 'pages_min:pages>=', 'pages_max:pages<', 'since:published_at>=', 'rated:ratingpositive'])
  const parameters = (books.schemas.listQuery as unknown as { properties: Record<string, { type?: string, description?: string }> }).properties
  t.match(parameters, {
    pages_min: { type: 'integer', description: 'Lowest pages, inclusive.' },
    pages_max: { type: 'integer', description: 'Fewer pages than this.' },
    since: { type: 'string' },
    rated: { type: 'boolean' }
  })
  t.same(validated(books.schemas.listQuery, { pages_min: '10', rated: 'true' }, true), { pages_min: 10, rated: true }, 'query-string text is coerced')
  t.equal(validated(books.schemas.listQuery, { rated: 'maybe' }, true), '/rated')
  t.same(defineResource({ ...book, filters: ['title'] }).filters, [{ name: 'title', field: 'title', op: '=' }], 'a list of fields is equality filters')
})

t.test('emptyPatch: the row unchanged by default, or refused', async (t) => {
  t.same(validated(defineResource(book).schemas.patch, {}), {})
  t.same(validated(defineResource({ ...book, emptyPatch: 'unchanged' }).schemas.patch, {}), {})
  t.equal(validated(defineResource({ ...book, emptyPatch: 'refused' }).schemas.patch, {}), '')
})

t.test('a mistaken filter or option fails at start, naming the mistake', async (t) => {
  const declare = (extra: object) => () => defineResource({ ...book, ...extra } as Parameters<typeof defineResource>[0])
  t.throws(declare({ filters: { long: { field: 'length', op: '>=' } } }), /filters names length, which is not in the representation/)
  t.throws(declare({ filters: { long: { field: 'pages', op: '>>' } } }), /filters\.long\.op must be one of =, >=, >, <=, <, positive, caseInsensitive or isNull/)
  t.throws(declare({ filters: { unnamed: { field: 'title', op: 'isNull' } } }), /filter unnamed: isNull needs a field that may be null, and title is never null/)
  t.throws(declare({ filters: { named: { field: 'title', op: 'positive' } } }), /filter named: positive needs a number field, and title is not one/)
  t.throws(declare({ filters: { Long: { field: 'pages', op: '>=' } } }), /filters\.Long: the name must be a lower-case identifier/)
  t.throws(declare({ filters: { limit: { field: 'pages', op: '<=' } } }), /a filter cannot be named limit/)
  t.throws(declare({ emptyPatch: 'ignored' }), /emptyPatch must be unchanged or refused/)
  t.doesNotThrow(declare({ name: 'product' }), 'a built-in declared resource\'s name is refused when served, not here')
})
