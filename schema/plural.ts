// The plural a resource's name takes in paths and GraphQL names when its declaration gives none.
import { pluralize, singularize } from 'inflection'

/**
 * The English plural of a resource's name (inflection's rules: `entry` → `entries`, `guess` →
 * `guesses`, `person` → `people`), on its last word for a camelCase name (`lineItem` → `lineItems`,
 * `salesPerson` → `salesPeople`). A word English does not count (`news`, `equipment`) is its own
 * plural: defineResource then asks for a `plural`.
 */
export function pluralName (name: string): string {
  const last = Math.max(0, name.search(/[A-Z][^A-Z]*$/))
  return name.slice(0, last) + pluralize(name.slice(last))
}

/**
 * The English singular of a relation's name (`watchers` → `watcher`, `people` → `person`), on its last
 * word for a camelCase name (`openTasks` → `openTask`): the name of one link of it (`linkTaskWatcher`).
 */
export function singularName (name: string): string {
  const last = Math.max(0, name.search(/[A-Z][^A-Z]*$/))
  return name.slice(0, last) + singularize(name.slice(last))
}
