import pg from 'pg'

/** Totals of pg_stat_statements: statements run, and the time PostgreSQL spent executing them (planning excluded). */
export interface Executed {
  calls: number
  ms: number
}

/**
 * Counts the SQL statements the bench database executes, from pg_stat_statements: the sum of
 * `calls` over the database's entries, read before and after a measured run. It counts what
 * PostgreSQL ran, whoever sent it, including BEGIN/COMMIT (track_utility is on by default). Left out:
 * the counter's own queries, and statements on `revoked_tokens`, which the API polls once a second
 * whatever it is asked (no request of the bench reads or writes that table).
 * Without the extension loaded (`shared_preload_libraries`) it says so and counts nothing.
 */
export class StatementCounter {
  readonly #client: pg.Client
  #available = false

  private constructor (client: pg.Client) {
    this.#client = client
  }

  static async open (databaseUrl: string): Promise<StatementCounter> {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    const counter = new StatementCounter(client)
    // A standby cannot create it (read-only): it has its primary's, replayed.
    await client.query('create extension if not exists pg_stat_statements').catch(() => {})
    try {
      await counter.#read()
      counter.#available = true
    } catch {
      counter.#available = false
    }
    return counter
  }

  get available (): boolean {
    return this.#available
  }

  /** Statements executed in this database so far, and their execution time; undefined without pg_stat_statements. */
  async total (): Promise<Executed | undefined> {
    return this.#available ? this.#read() : undefined
  }

  async #read (): Promise<Executed> {
    const { rows } = await this.#client.query<{ calls: string, ms: number }>(`
      select coalesce(sum(s.calls), 0)::text as calls, coalesce(sum(s.total_exec_time), 0)::float8 as ms
      from pg_stat_statements s join pg_database d on d.oid = s.dbid
      where d.datname = current_database() and s.query not like '%pg_stat_statements%' and s.query not like '%revoked_tokens%'`)
    return { calls: Number(rows[0]?.calls ?? 0), ms: rows[0]?.ms ?? 0 }
  }

  async serverVersion (): Promise<string> {
    const { rows } = await this.#client.query<{ server_version: string }>('show server_version')
    return rows[0]?.server_version ?? 'unknown'
  }

  /** The postmaster's pid (the parent of this connection's backend), to tell PostgreSQL's CPU time from the rest. */
  async backendPid (): Promise<number> {
    const { rows } = await this.#client.query<{ pid: number }>('select pg_backend_pid() as pid')
    return rows[0]?.pid ?? 0
  }

  async close (): Promise<void> {
    await this.#client.end()
  }
}
