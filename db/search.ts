import { sql, type RawBuilder } from 'kysely'

/** `q` as an ILIKE pattern that matches parts of words, with the user's own wildcards escaped. */
export function containsPattern (q: string): string {
  return '%' + q.replace(/[\\%_]/g, (c) => '\\' + c) + '%'
}

/**
 * `expression ILIKE '%q%'`, where `expression` is the one a trigram index was built on, so that
 * PostgreSQL can use that index.
 */
export function matches (expression: RawBuilder<string>, q: string): RawBuilder<boolean> {
  return sql<boolean>`${expression} ilike ${containsPattern(q)}`
}
