import { randomBytes } from 'node:crypto'
import fc from 'fast-check'
import { sql } from 'kysely'
import pg from 'pg'
import t from 'tap'
import { connect, type Db } from '../db/connect.js'
import { MAX_PREPARED_PER_CONNECTION } from '../db/prepared.js'
import { parseTimestamptz } from '../db/timestamps.js'
import { withDatabase } from './helper.js'

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
    fc.date({ min: new Date('0100-01-01T00:00:00Z'), max: new Date('9999-12-30T00:00:00Z'), noInvalidDate: true }),
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

const serverUrl = process.env.DATABASE_URL
t.test('a real server prepares each statement once per connection, and only when asked', { skip: serverUrl === undefined || serverUrl === '' ? 'needs DATABASE_URL' : false }, async (t) => {
  const name = `tandem_test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: serverUrl })
  await admin.connect()
  await admin.query(`create database ${name}`)
  const url = withDatabase(serverUrl as string, name)
  const opened: Db[] = []
  t.teardown(async () => {
    for (const db of opened) await db.destroy()
    await admin.query(`drop database if exists ${name} with (force)`)
    await admin.end()
  })
  const open = async (preparedStatements: boolean) => {
    const db = await connect({ databaseUrl: url, poolSize: 1, preparedStatements })
    opened.push(db)
    return db
  }
  const preparedOn = async (db: Db, run: (trx: Db) => Promise<unknown>) => db.connection().execute(async (conn) => {
    await run(conn)
    const { rows } = await sql<{ statement: string }>`select statement from pg_prepared_statements where name like 'tandem_%'`.execute(conn)
    return rows.map((r) => r.statement)
  })

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
