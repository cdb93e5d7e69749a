// A declared resource's list arguments as GraphQL gives them (`assigneeId: null`, `orderBy: [DUE_ON_DESC]`),
// translated into its REST list query (`assignee_id_null: true`, `sort: '-due_on'`) and checked by the same
// schema: for its root lists and connections, its changes by filter and the nested lists of its rows.
import { badRequest } from '../schema/errors.js'
import { nullFilterName, type Resource } from '../schema/resource.js'
import { camelCase, idTypeOf, orderByOf, scalarOf } from '../schema/resource-sdl.js'
import { parseKey, type KeyType } from '../schema/keys.js'
import { checkInput, sortOf } from './inputs.js'

type Args = Readonly<Record<string, unknown>>
type Query = Record<string, unknown>

export interface ListArguments {
  /** The filters and `q` of a list (`names`: which of them the arguments may give; default: all), as REST names them. */
  filters: (args: Args, names?: readonly string[]) => Query
  /** The filters, `q` and `orderBy` of a list as REST's list query, checked by its schema. */
  query: (args: Args) => Query
  /** The REST name of the NULL filter an explicit null on the equality filter `name` means, when its field may be null. */
  nullOf: (name: string) => string | undefined
  /** The error of an explicit null on a filter whose field is never null. */
  refusedNull: (name: string) => Error
  /** The filters whose values are `ID`s (text in GraphQL; in REST, the key as its type has it), and that type. */
  idFilters: ReadonlyMap<string, KeyType>
}

/** The translation of `resource`'s list arguments. */
export function listArguments (resource: Resource): ListArguments {
  // An ID filter (`…_id`) comes as text, and the query string's schema wants the key as its field's
  // type has it (an integer's number, a uuid's text): parsed by that type.
  const idFilters = new Map(resource.filters
    .filter(({ field, op }) => op !== 'positive' && op !== 'isNull' && scalarOf(resource, field) === 'ID')
    .map(({ name, field }) => [name, idTypeOf(resource.representation.properties[field])] as const))
  const filterNames = [...resource.filters.map(({ name }) => name), ...(resource.search ?? []).length > 0 ? ['q'] : []]
  // An explicit null asks for the rows whose field is null (`assigneeId: null`, as `assigneeIdNull: true`),
  // where the field may be null; on any other filter it is refused: it never means "no filter".
  const nullFilters = new Set(resource.filters.filter(({ op }) => op === 'isNull').map(({ name }) => name))
  const nullOf = (name: string): string | undefined => nullFilters.has(nullFilterName(name)) && resource.filters.some((filter) => filter.name === name && filter.op === '=') ? nullFilterName(name) : undefined
  const refusedNull = (name: string): Error => badRequest(`${camelCase(name)} must not be null: leave it out not to filter by it`, camelCase(name))
  // `orderBy` as REST's `sort`, whose cursors GraphQL's then share.
  const orderBy = orderByOf(resource)?.values ?? new Map<string, string>()
  const filters = (given: Args, names: readonly string[] = filterNames): Query => {
    const translated: Query = {}
    for (const name of names) {
      const value = given[camelCase(name)]
      if (value === undefined) continue
      if (value === null) {
        const isNull = nullOf(name)
        if (isNull === undefined) throw refusedNull(name)
        translated[isNull] = true
        continue
      }
      const type = idFilters.get(name)
      // A nested list's arguments are read from the document untyped (graphql/relations.ts): an ID given
      // as an Int literal (`code: 42`) is then a number, which GraphQL's ID takes as its decimal text.
      const id = typeof value === 'number' ? String(value) : value
      translated[name] = type === undefined ? value : parseKey(type, id, camelCase(name))
    }
    return translated
  }
  const query = (args: Args): Query => {
    const sort = sortOf(args.orderBy, orderBy)
    return { ...checkInput<Query>(resource.schemas.listQuery, filters(args)), ...sort === undefined ? {} : { sort } }
  }
  return { filters, query, nullOf, refusedNull, idFilters }
}
