import { sql, type RawBuilder } from 'kysely'
import type { Filter } from './pagination.js'

/** `q` as an ILIKE pattern that matches parts of words, with the user's own wildcards escaped. */
export function containsPattern (q: string): string {
  return '%' + q.replace(/[\\%_]/g, (c) => '\\' + c) + '%'
}

/**
 * `expression ILIKE '%q%'`, where `expression` is the one a trigram index was built on, so that
 * PostgreSQL can use that index.
 */
export function matches (expression: RawBuilder<string>, q: string): RawBuilder<boolean> {
  return ilike(expression, containsPattern(q))
}

/** `expression ILIKE pattern`, the pattern bound as a parameter. */
export function ilike (expression: RawBuilder<string>, pattern: unknown): RawBuilder<boolean> {
  return sql<boolean>`${expression} ilike ${pattern}`
}

/**
 * What `q` searches in a declared resource's `fields`: `coalesce(a::text, '') || ' ' || coalesce(b::text, '')`,
 * the expression its trigram index must be built on.
 */
export function searchedText (fields: readonly string[]): RawBuilder<string> {
  const each = fields.map((field) => sql`coalesce(${sql.ref(field)}::text, '')`)
  return sql<string>`(${sql.join(each, sql` || ' ' || `)})`
}

/** A list filter on the words of `expression`, for a `ListSpec`. */
export function searchFilter (expression: RawBuilder<string>): Filter {
  return {
    where: (query, pattern) => query.where(ilike(expression, pattern)),
    bind: (q) => containsPattern(q as string)
  }
}
