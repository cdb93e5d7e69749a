import { GraphQLError, parse } from 'graphql'
import { clientError, codes } from './errors.js'

/** Bytes a document may have, comments included; a larger one is refused before it is parsed. */
export const MAX_DOCUMENT_BYTES = 64 * 1024

/** Tokens a document may have; a larger one is refused while it is parsed. */
export const MAX_DOCUMENT_TOKENS = 5000

/**
 * What one parsed document may hold in memory at most, text and syntax tree: a document within
 * both limits above, made of the smallest tokens or of comments only (graphql-js keeps every token,
 * comments too, linked from the tree), stays under this.
 */
export const MAX_PARSED_DOCUMENT_BYTES = 3 * 1024 * 1024

/** The refusal of a document over MAX_DOCUMENT_BYTES, or undefined. */
export function oversized (source: string): GraphQLError | undefined {
  // Cheap first: UTF-8 needs at least one byte per UTF-16 unit.
  if (source.length <= MAX_DOCUMENT_BYTES / 3 || Buffer.byteLength(source, 'utf8') <= MAX_DOCUMENT_BYTES) return undefined
  return clientError(`Syntax Error: the document is larger than ${MAX_DOCUMENT_BYTES / 1024} KiB`, codes.parseFailed)
}

/**
 * The refusal of a document over either limit, or undefined, for documents that Mercurius parses
 * without its `parseOptions` (those of WebSocket subscriptions). Other syntax errors are left to Mercurius.
 */
export function overLimits (source: string): GraphQLError | undefined {
  const tooLarge = oversized(source)
  if (tooLarge !== undefined) return tooLarge
  try {
    parse(source, { maxTokens: MAX_DOCUMENT_TOKENS, noLocation: true })
  } catch (error) {
    if (error instanceof GraphQLError && error.message.includes(`more that ${MAX_DOCUMENT_TOKENS} tokens`)) {
      return clientError(error.message, codes.parseFailed)
    }
  }
  return undefined
}

/**
 * Entries for each of Mercurius's two parsed-document caches (valid documents, and those that
 * failed validation) so that together they hold at most `bytes`: its `cache` option counts entries,
 * so the budget is spent as if every entry were as large as a document may be.
 */
export function documentCacheEntries (bytes: number): number {
  return Math.max(1, Math.floor(bytes / 2 / MAX_PARSED_DOCUMENT_BYTES))
}
