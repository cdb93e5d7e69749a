import type { PostgresPool, PostgresPoolClient } from 'kysely'
import type pg from 'pg'
import { submitShaped, type Done, type RowShapes } from './internals/index.js'

/**
 * Distinct statements a connection keeps prepared. Queries are built from a few shapes, so a
 * connection rarely needs more; past this, new texts run unprepared rather than grow the server's
 * memory without bound.
 */
export const MAX_PREPARED_PER_CONNECTION = 256

// A select and nothing after it: a list page whose limit is written into its text has no parameter.
const singleSelect = /^select\s[^;]*$/i

/** What a pooled connection has prepared: statement names by text, and their rows' shapes. */
interface Prepared {
  names: Map<string, string>
  shapes: RowShapes
  /** The connection as Kysely's driver is handed it. */
  client: PostgresPoolClient
}

/**
 * A `pg` pool as Kysely's `PostgresDialect` takes one (its documented `PostgresPool`), whose clients
 * run each parameterized statement, and a single `select` without parameters, as a named prepared
 * statement: PostgreSQL parses and plans a text once per connection instead of at every call, and
 * the Parse message is not sent again (see PERFORMANCE-DECISIONS.md, 'Prepared statements'). Other
 * statements without parameters (BEGIN, migrations, scripts of several commands) run as they are.
 * `readRows` (db/connect.ts) runs its reads through `run` on the same clients.
 */
export class PreparingPool implements PostgresPool {
  /**
   * Run prepared statements as pg `Query` objects that build their rows by shape (db/internals);
   * otherwise through pg's public `client.query({ name, text, values })`. Set once the start check
   * (`checkPg`) has passed.
   */
  shapedRows = false
  readonly #connections = new WeakMap<pg.ClientBase, Prepared>()

  constructor (readonly pool: pg.Pool) {}

  async connect (): Promise<PostgresPoolClient> {
    return this.#prepared(await this.pool.connect()).client
  }

  async end (): Promise<void> {
    await this.pool.end()
  }

  /** Runs `text` on `client`, one of this pool's, prepared when it can be. */
  run (client: pg.PoolClient, text: string, values: unknown[], done: Done): void {
    if (values.length === 0 && !singleSelect.test(text)) {
      client.query(text, values, done)
      return
    }
    const { names, shapes } = this.#prepared(client)
    let name = names.get(text)
    if (name === undefined && names.size < MAX_PREPARED_PER_CONNECTION) {
      name = `tandem_${names.size + 1}`
      names.set(text, name)
    }
    if (name === undefined) client.query(text, values, done)
    else if (this.shapedRows) submitShaped(client, text, values, name, shapes, done)
    else client.query({ name, text, values }, done)
  }

  #prepared (client: pg.PoolClient): Prepared {
    let prepared = this.#connections.get(client)
    if (prepared === undefined) {
      // One wrapper per connection, as Kysely's driver keeps its state per client object.
      const query = (text: string | Parameters<PostgresPoolClient['query']>[0], values?: readonly unknown[]): Promise<unknown> | unknown => {
        if (typeof text !== 'string') return client.query(text as unknown as pg.QueryConfig)
        return new Promise((resolve, reject) => {
          // Kysely hands over a copy of its parameters already.
          this.run(client, text, (values ?? []) as unknown[], (error, result) => { if (error == null) resolve(result); else reject(error) })
        })
      }
      prepared = { names: new Map(), shapes: new Map(), client: { query, release: () => { client.release() } } as PostgresPoolClient }
      this.#connections.set(client, prepared)
    }
    return prepared
  }
}
