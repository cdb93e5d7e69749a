import fc from 'fast-check'
import { CamelCasePlugin, sql } from 'kysely'
import pg from 'pg'
import t, { type Test } from 'tap'
import { connect, type Db } from '../../db/connect.js'
import type { KeysetPage } from '../../db/pagination.js'
import { checkPg } from '../../db/internals/index.js'
import { MAX_PREPARED_PER_CONNECTION, PreparingPool } from '../../db/prepared.js'
import { isoString, parseTimestamptz } from '../../db/timestamps.js'
import { listUsers } from '../helpers/users.js'
import { wireDatabase } from '../helpers/database.js'

const pgParser = pg.types.getTypeParser(1184) as (text: string) => Date
const pad = (n: number, width = 2) => String(Math.abs(n)).padStart(width, '0')

/** A timestamptz as PostgreSQL writes it in text, for an instant and a session offset in minutes. */
function postgresText (instant: Date, offsetMinutes: number, fractionDigits: number): string {
  const local = new Date(instant.getTime() + offsetMinutes * 60_000)
  const micros = String(local.getUTCMilliseconds() * 1000).padStart(6, '0').slice(0, fractionDigits).replace(/0+$/, '')
  const sign = offsetMinutes < 0 ? '-' : '+'
  const offset = `${sign}${pad(Math.trunc(Math.abs(offsetMinutes) / 60))}${Math.abs(offsetMinutes) % 60 === 0 ? '' : ':' + pad(Math.abs(offsetMinutes) % 60)}`
  return `${pad(local.getUTCFullYear(), 4)}-${pad(local.getUTCMonth() + 1)}-${pad(local.getUTCDate())} ` +
    `${pad(local.getUTCHours())}:${pad(local.getUTCMinutes())}:${pad(local.getUTCSeconds())}${micros === '' ? '' : '.' + micros}${offset}`
}

t.test('timestamptz text parses to the same instant as pg\'s own parser', async (t) => {
  t.doesNotThrow(() => fc.assert(fc.property(
    fc.date({ min: new Date('0001-01-02T00:00:00Z'), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true }),
    fc.integer({ min: -15 * 60, max: 15 * 60 }).map((m) => m - (m % 15)),
    fc.integer({ min: 0, max: 6 }),
    (instant, offset, digits) => {
      const text = postgresText(instant, offset, digits)
      return parseTimestamptz(text).getTime() === pgParser(text).getTime()
    }
  ), { numRuns: 2000 }), 'random instants, offsets and fractions')
  for (const text of ['infinity', '-infinity', '0044-03-15 12:00:00+00 BC', '12345-01-01 00:00:00+00', '0050-06-01 00:00:00+00', '2026-11-21 02:26:12.5+05:30:15']) {
    const expected = pgParser(text)
    const actual = parseTimestamptz(text)
    t.equal(typeof actual === 'object' ? actual.getTime() : actual, typeof expected === 'object' ? expected.getTime() : expected, text)
  }
})

t.test('isoString writes what toISOString writes, for every date', async (t) => {
  t.doesNotThrow(() => fc.assert(fc.property(
    fc.date({ noInvalidDate: true }),
    (date) => isoString(date) === date.toISOString()
  ), { numRuns: 5000 }), 'random dates, years with a sign and six digits included')
  for (const text of ['1970-01-01T00:00:00.000Z', '1969-12-31T23:59:59.999Z', '2000-02-29T12:00:00.010Z', '1000-01-01T00:00:00.000Z', '0999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z', '+010000-01-01T00:00:00.000Z', '-000001-06-15T08:30:00.500Z']) {
    t.equal(isoString(new Date(text)), text)
  }
  t.throws(() => isoString(new Date(Number.NaN)), RangeError, 'an invalid date throws as toISOString does')
})

/** `open` connects a `pg` pool of one connection to a migrated database of its own (`wireDatabase`). */
function ownDatabase (t: Test): (preparedStatements?: boolean) => Promise<Db> {
  return async (preparedStatements = true) => {
    const db = await connect({ databaseUrl: await wireDatabase(t), poolSize: 1, preparedStatements })
    t.teardown(() => db.destroy())
    return db
  }
}

interface Prepared { statement: string, generic_plans: number, custom_plans: number }
/** The statements Tandem prepared on the connection `db` runs on. */
const preparedStatements = async (db: Db): Promise<Prepared[]> =>
  (await sql<Prepared>`select statement, generic_plans, custom_plans from pg_prepared_statements where name like 'tandem_%'`.execute(db)).rows
const preparedOnConnection = async (db: Db, run: (trx: Db) => Promise<unknown>): Promise<Prepared[]> => db.connection().execute(async (conn) => {
  await run(conn)
  return preparedStatements(conn)
})

t.test('a server reached through pg prepares each statement once per connection, and only when asked', async (t) => {
  const open = ownDatabase(t)
  const preparedOn = async (db: Db, run: (trx: Db) => Promise<unknown>) => (await preparedOnConnection(db, run)).map((r) => r.statement)

  const on = await open(true)
  const statements = await preparedOn(on, async (conn) => {
    for (const id of [1, 2, 3]) await conn.selectFrom('users').select('id').where('id', '=', id).execute()
  })
  t.same(statements.filter((s) => s.includes('from "users"')).length, 1, 'three runs of one statement text: one prepared statement')

  const off = await open(false)
  t.same(await preparedOn(off, async (conn) => conn.selectFrom('users').select('id').where('id', '=', 1).execute()), [], 'preparedStatements: false prepares nothing')

  const sums: number[] = []
  const many = await preparedOn(on, async (conn) => {
    for (let n = 0; n < MAX_PREPARED_PER_CONNECTION + 20; n++) {
      const { rows } = await sql<{ n: number }>`select ${n}::int + ${sql.raw(String(n))} as n`.execute(conn)
      sums.push(rows[0]?.n ?? -1)
    }
  })
  t.same(sums, sums.map((_, n) => 2 * n), 'every statement answered, prepared or not')
  t.equal(many.length, MAX_PREPARED_PER_CONNECTION, 'a connection keeps at most MAX_PREPARED_PER_CONNECTION; the rest still run')
})

t.test('a list page keeps one plan per connection: its limit is written into the statement', async (t) => {
  const db = await ownDatabase(t)()
  await db.insertInto('users').values(Array.from({ length: 30 }, (_, i) => ({ name: `plan-${i}`, email: `plan-${i}@example.com` }))).execute()
  const secret = 'a-secret-of-at-least-thirty-two-characters'
  const seen: number[][] = []
  const prepared = await preparedOnConnection(db, async (conn) => {
    for (let run = 0; run < 8; run++) {
      const first = await listUsers(conn, { limit: 5 }, { secret }) as KeysetPage
      const next = await listUsers(conn, { limit: 5, cursor: first.pagination.nextCursor ?? '' }, { secret }) as KeysetPage
      seen.push([...first.data, ...next.data].map((row) => row.id))
    }
  })
  t.same(seen[7], seen[0], 'every run the same ten users')
  t.same(new Set(seen[0]).size, 10, 'ten different users')
  const pages = prepared.filter((p) => p.statement.includes('from "users"') && p.statement.includes('limit 6'))
  t.equal(pages.length, 2, 'the first page and the cursor page, each prepared once')
  for (const page of pages) {
    t.notMatch(page.statement, /limit \$/, 'the limit is in the text')
    // Planned for its values at most five times (while PostgreSQL compares); then one plan for all.
    t.ok(page.generic_plans >= 3 && page.custom_plans <= 5, `generic ${page.generic_plans}, custom ${page.custom_plans}: ${page.statement.slice(0, 60)}…`)
  }
})

t.test('a page read on the pool directly is prepared like any other; another Kysely still applies its plugins', async (t) => {
  const db = await ownDatabase(t)()
  await db.insertInto('users').values(Array.from({ length: 8 }, (_, i) => ({ name: `pool-${i}`, email: `pool-${i}@example.com` }))).execute()
  const secret = 'a-secret-of-at-least-thirty-two-characters'
  for (let run = 0; run < 8; run++) {
    const page = await listUsers(db, { limit: 3 }, { secret }) as KeysetPage
    t.same(page.data.map((row) => row.name), ['pool-0', 'pool-1', 'pool-2'], `run ${run}: the first three users`)
  }
  // One pooled connection: this query sees what the pages prepared.
  const pages = (await preparedStatements(db)).filter((p) => p.statement.includes('from "users"') && p.statement.includes('limit 4'))
  t.equal(pages.length, 1, 'the page was prepared once on its connection')
  t.ok((pages[0]?.generic_plans ?? 0) >= 7, 'and PostgreSQL kept its generic plan')

  const camel = await listUsers(db.withPlugin(new CamelCasePlugin()), { limit: 1 }, { secret }) as KeysetPage
  t.ok('createdAt' in (camel.data[0] ?? {}), 'a Kysely with plugins reads through Kysely: its result transform applies')
})

t.test('an author\'s name read by id comes from an index alone', async (t) => {
  const db = await ownDatabase(t)()
  await db.insertInto('users').values(Array.from({ length: 2000 }, (_, i) => ({ name: `author-${i}`, email: `author-${i}@example.com` }))).execute()
  await sql`vacuum analyze users`.execute(db)
  const { rows } = await sql<{ 'QUERY PLAN': string }>`explain select name from users where id = 1234`.execute(db)
  t.match(rows.map((row) => row['QUERY PLAN']).join('\n'), /Index Only Scan using users_id_name_idx/)
})

t.test('prepared statements make the rows pg makes, and a value their parser refuses fails that query alone', async (t) => {
  const open = ownDatabase(t)
  const [prepared, plain] = [await open(true), await open(false)]
  // Every column type the API reads, nulls, two columns of one name, and one pg must make itself.
  const read = async (db: Db, n: number) => [...(await sql<Record<string, unknown>>`
    select ${n}::int4 as id, ${`name ${n}`}::text as name, 12345678901::int8 as big, 19.99::numeric as price,
      ${n % 2 === 0}::bool as flag, '2026-11-22 10:00:00.123+05:30'::timestamptz as at, '{"a":[1,null]}'::jsonb as doc,
      array['x', null]::text[] as tags, null::text as nothing, 'first' as id, 2.5::float8 as "we""ird"
    from generate_series(1, 3)`.execute(db)).rows,
  ...(await sql<Record<string, unknown>>`select ${n}::int4 as n, 1 as "__proto__"`.execute(db)).rows]
  for (const n of [1, 2, 3]) {
    const [ours, theirs] = [await read(prepared, n), await read(plain, n)]
    t.strictSame(ours, theirs, `run ${n}: the same rows as pg's own`)
    t.same(ours.map((row) => Object.keys(row)), theirs.map((row) => Object.keys(row)), `run ${n}: properties in pg's order`)
  }
  t.equal((await preparedStatements(prepared)).filter((p) => p.statement.includes('generate_series')).length, 1, 'and the statement was prepared once')

  const pool = new pg.Pool({
    connectionString: await wireDatabase(t),
    max: 1,
    types: { getTypeParser: ((oid: number) => oid === 23 ? (text: string) => { if (text === '13') throw new Error('unlucky'); return Number(text) } : pg.types.getTypeParser(oid)) as typeof pg.types.getTypeParser }
  })
  t.teardown(() => pool.end())
  const preparing = new PreparingPool(pool)
  preparing.shapedRows = await checkPg(pool)
  t.ok(preparing.shapedRows, 'rows are built by shape')
  const client = await preparing.connect()
  t.teardown(() => { client.release() })
  const ask = async (n: number) => (await client.query<{ n: number }>('select $1::int4 as n', [n])).rows
  t.same(await ask(12), [{ n: 12 }], 'a value is parsed')
  await t.rejects(ask(13), { message: 'unlucky' }, 'a value the parser refuses fails the query')
  t.same(await ask(14), [{ n: 14 }], 'and the connection answers the next one')
})
