import { readdir, readFile } from 'node:fs/promises'

/**
 * Where the SDL files live: `schema/graphql/` of the package, found from this module's own
 * location, so that it works from the sources and from `dist/` (the build copies the folder).
 */
export const schemaDirectory = new URL('../schema/graphql/', import.meta.url)

/** The schema's SDL: every `.graphql` file of the folder (one type per file), joined in name order. */
export async function loadSchema (directory: URL = schemaDirectory): Promise<string> {
  const files = (await readdir(directory)).filter((name) => name.endsWith('.graphql')).sort()
  if (files.length === 0) throw new Error(`no .graphql files in ${directory.pathname}`)
  const parts = await Promise.all(files.map((name) => readFile(new URL(name, directory), 'utf8')))
  return parts.join('\n')
}
