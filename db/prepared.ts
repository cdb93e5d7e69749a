import pg from 'pg'

/**
 * Distinct statements a connection keeps prepared. Queries are built from a few shapes, so a
 * connection rarely needs more; past this, new texts run unprepared rather than grow the server's
 * memory without bound.
 */
export const MAX_PREPARED_PER_CONNECTION = 256

type Query = (config: unknown, values?: unknown, callback?: unknown) => unknown

// A select and nothing after it: a list page whose limit is written into its text has no parameter.
const singleSelect = /^select\s[^;]*$/i

type Done = (error: Error | undefined, result: pg.QueryResult) => void

/**
 * Runs `text` as pg's own `Query`, named when `name` is given. Handing the client a query object
 * skips what `client.query(config)` does with a config object: a copy of it through property
 * descriptors and a second promise to rewrite a failed query's stack (11–14 µs of the API's CPU per
 * served list page, BENCHMARKS.md). Kysely still adds its caller's stack to a failed statement.
 */
function submit (original: Query, text: string, values: unknown[], name: string | undefined, done: Done): void {
  const query = new pg.Query(text, values) as pg.Query & { name?: string, callback?: Done }
  if (name !== undefined) query.name = name
  query.callback = done
  original(query)
}

/**
 * Makes `client.query(text, values[, callback])` — how Kysely runs every statement, and `readRows`
 * every compiled read — a named prepared statement: PostgreSQL parses and plans the text once per
 * connection instead of at every call, and the Parse message is no longer sent. Other statements
 * without parameters (BEGIN, migrations, scripts of several commands) run as they are.
 */
export function preparingStatements (client: pg.PoolClient): void {
  const names = new Map<string, string>()
  const query = client.query.bind(client) as Query
  const prepared: Query = (config, values, callback) => {
    if (typeof config !== 'string' || !Array.isArray(values) || (callback !== undefined && typeof callback !== 'function') ||
      (values.length === 0 && !singleSelect.test(config))) {
      return query(config, values, callback)
    }
    let name = names.get(config)
    if (name === undefined && names.size < MAX_PREPARED_PER_CONNECTION) {
      name = `tandem_${names.size + 1}`
      names.set(config, name)
    }
    if (callback !== undefined) {
      submit(query, config, values, name, callback as Done)
      return undefined
    }
    return new Promise((resolve, reject) => {
      submit(query, config, values, name, (error, result) => { if (error == null) resolve(result); else reject(error) })
    })
  }
  client.query = prepared as typeof client.query
}
