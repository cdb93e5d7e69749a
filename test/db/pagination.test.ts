import { createHmac } from 'node:crypto'
import { sql } from 'kysely'
import t from 'tap'
import { encodeCursor } from '../../db/cursor.js'
import { paginate, type KeysetPage, type ListParams, type ListSpec, type Row } from '../../db/pagination.js'
import { LITERAL_LIMITS, MAX_SHAPES, ShapedStatements } from '../../db/statements.js'
import { listUsers, userRows } from '../helpers/users.js'
import { resetDb, testDb } from '../helpers/app.js'
import { recordSql } from '../helpers/sql-log.js'

const secret = 'pagination-test-secret'

async function insertUsers (count: number, from = 0): Promise<void> {
  const db = await testDb()
  // Few distinct names and timestamps, so that sorting leans on the id tiebreaker.
  await db.insertInto('users').values(Array.from({ length: count }, (_, i) => ({
    name: `name-${(from + i) % 7}`,
    email: `user${from + i}@example.com`
  }))).execute()
  await sql`update users set created_at = timestamptz '2026-01-01' + (id % 5) * interval '1 day'`.execute(db)
}

/** Follows `nextCursor` to the end, calling `between` after each page. */
async function walk (params: ListParams & Record<string, unknown>, between?: () => Promise<void>): Promise<Row[]> {
  const db = await testDb()
  const seen: Row[] = []
  let cursor: string | undefined
  for (let guard = 0; guard < 1000; guard++) {
    const page = await listUsers(db, { ...params, cursor }, { secret }) as KeysetPage
    seen.push(...page.data)
    t.equal(page.pagination.hasMore, page.pagination.nextCursor !== null)
    if (page.pagination.nextCursor === null) return seen
    cursor = page.pagination.nextCursor
    if (between !== undefined) await between()
  }
  throw new Error('pagination did not end')
}

function expectedOrder (rows: Row[], field: string, direction: 'asc' | 'desc'): number[] {
  const sign = direction === 'asc' ? 1 : -1
  const key = (row: Row) => (row[field] instanceof Date ? (row[field] as Date).getTime() : row[field]) as string | number
  return [...rows].sort((a, b) => {
    const x = key(a)
    const y = key(b)
    if (x !== y) return (x < y ? -1 : 1) * sign
    return (a.id - b.id) * sign
  }).map((r) => r.id)
}

t.beforeEach(async () => { await resetDb(await testDb()) })

t.test('every sortable field, both directions, pages through every row exactly once in order', async (t) => {
  await insertUsers(53)
  const db = await testDb()
  const all = await db.selectFrom('users').select(['id', 'name', 'created_at']).execute() as Row[]
  for (const field of ['id', 'name', 'created_at']) {
    for (const direction of ['asc', 'desc'] as const) {
      const viaOrder = await walk({ limit: 10, sort: field, order: direction })
      t.same(viaOrder.map((r) => r.id), expectedOrder(all, field, direction), `sort=${field}&order=${direction}`)
      if (direction === 'desc') {
        const viaMinus = await walk({ limit: 7, sort: '-' + field })
        t.same(viaMinus.map((r) => r.id), expectedOrder(all, field, direction), `sort=-${field}`)
      }
    }
  }
})

t.test('rows inserted between fetches are neither lost nor repeated', async (t) => {
  await insertUsers(30)
  let next = 1000
  const seen = await walk({ limit: 4, sort: 'name' }, async () => { await insertUsers(3, next); next += 3 })
  const ids = seen.map((r) => r.id)
  t.equal(new Set(ids).size, ids.length, 'no row repeated')
  const original = (await (await testDb()).selectFrom('users').select('id').where('id', '<=', 30).execute()).map((r) => r.id)
  t.ok(original.every((id) => ids.includes(id)), 'every row that existed at the start was returned')
})

t.test('a deep keyset page is a row-value comparison, never an OFFSET', async (t) => {
  await insertUsers(40)
  const recorded = recordSql(await testDb())
  const first = await listUsers(recorded.db, { limit: 5, sort: 'created_at' }, { secret }) as KeysetPage
  recorded.statements.length = 0
  const second = await listUsers(recorded.db, { limit: 5, sort: 'created_at', cursor: first.pagination.nextCursor ?? '' }, { secret }) as KeysetPage
  t.equal(second.data.length, 5)
  t.equal(recorded.statements.length, 1, 'one statement per page, no count unless asked')
  const statement = recorded.statements[0] ?? ''
  t.notMatch(statement, /offset/i)
  t.match(statement, /\("users"\."created_at", "users"\."id"\) > \(\$1, \$2\)/)
  t.match(statement, /limit 6$/, 'the limit (and one more) in the text')
})

t.test('cursors that are tampered, foreign, malformed or made under another sort or filters are 400 on cursor', async (t) => {
  await insertUsers(20)
  const db = await testDb()
  const page = await listUsers(db, { limit: 2, sort: 'name', name: 'name-1' }, { secret }) as KeysetPage
  const cursor = page.pagination.nextCursor ?? ''
  t.ok(cursor)
  const unfiltered = (await listUsers(db, { limit: 2, sort: 'name' }, { secret }) as KeysetPage).pagination.nextCursor ?? ''
  t.ok(unfiltered)
  const [bodyPart, signature] = cursor.split('.') as [string, string]
  const payload = JSON.parse(Buffer.from(bodyPart, 'base64url').toString()) as Record<string, unknown>
  const forged = Buffer.from(JSON.stringify({ ...payload, i: 1 })).toString('base64url') + '.' + signature
  const cases: Record<string, [string, ListParams & Record<string, unknown>]> = {
    tampered: [forged, { sort: 'name', name: 'name-1' }],
    foreign: [encodeCursor('another-secret', payload as never), { sort: 'name', name: 'name-1' }],
    malformed: ['not-a-cursor', { sort: 'name', name: 'name-1' }],
    'bad base64': ['!!!.???', { sort: 'name', name: 'name-1' }],
    'signature padded': [`${cursor}=`, { sort: 'name', name: 'name-1' }],
    'signature cut short': [cursor.slice(0, -1), { sort: 'name', name: 'name-1' }],
    'signature not ASCII': [`${bodyPart}.${'é'.repeat(16)}`, { sort: 'name', name: 'name-1' }],
    'other sort': [cursor, { sort: 'created_at', name: 'name-1' }],
    'other direction': [cursor, { sort: '-name', name: 'name-1' }],
    'other filters': [cursor, { sort: 'name', name: 'name-2' }],
    'filter dropped': [cursor, { sort: 'name' }],
    'filter added to an unfiltered cursor': [unfiltered, { sort: 'name', name: 'name-1' }]
  }
  for (const [label, [given, params]] of Object.entries(cases)) {
    await t.rejects(listUsers(db, { limit: 2, ...params, cursor: given }, { secret }), { name: 'TandemError', statusCode: 400, field: 'cursor' }, label)
  }
  const ok = await listUsers(db, { limit: 2, sort: 'name', name: 'name-1', cursor }, { secret })
  t.equal(ok.data.length, 1, 'the genuine cursor still brings the last row')
  const hmac = createHmac('sha256', secret).update(bodyPart).digest().subarray(0, 12).toString('base64url')
  t.equal(signature, hmac, 'the signature is the first 12 bytes of HMAC-SHA256: cursors issued by earlier versions stay valid')
})

t.test('a nullable sort column pages through NULLs without losing or repeating rows', async (t) => {
  await insertUsers(25)
  const db = await testDb()
  await sql`update users set email_verified_at = case when id % 3 = 0 then null else timestamptz '2026-02-01' + (id % 4) * interval '1 hour' end`.execute(db)
  const spec: ListSpec<'users'> = { table: 'users', columns: ['id', 'email_verified_at'], sortable: { id: {}, email_verified_at: { nullable: true } } }
  const all = await db.selectFrom('users').select(['id', 'email_verified_at']).execute()
  for (const direction of ['asc', 'desc'] as const) {
    const ids: number[] = []
    let cursor: string | undefined
    do {
      const page = await paginate(db, spec, { limit: 4, sort: 'email_verified_at', order: direction, cursor }, { secret, filters: {} }) as KeysetPage
      ids.push(...page.data.map((r) => r.id))
      cursor = page.pagination.nextCursor ?? undefined
    } while (cursor !== undefined)
    // PostgreSQL's order: NULLs last ascending, first descending; ties by id in the same direction.
    const expected = [...all].sort((a, b) => {
      const x = a.email_verified_at?.getTime() ?? Infinity
      const y = b.email_verified_at?.getTime() ?? Infinity
      return direction === 'asc' ? (x - y || a.id - b.id) : (y - x || b.id - a.id)
    }).map((r) => r.id)
    t.same(ids, expected, direction)
  }
})

t.test('page and offset modes carry meta.total; keyset counts only when asked', async (t) => {
  await insertUsers(23)
  const db = await testDb()
  const page = await listUsers(db, { limit: 10, page: 3 }, { secret })
  t.same('meta' in page && page.meta, { page: 3, limit: 10, total: 23 })
  t.same(page.data.map((r) => r.id), [21, 22, 23])
  const offset = await listUsers(db, { limit: 5, offset: 20 }, { secret })
  t.same('meta' in offset && offset.meta, { offset: 20, limit: 5, total: 23 })
  const keyset = await listUsers(db, { limit: 5 }, { secret }) as KeysetPage
  t.equal(keyset.pagination.total, undefined)
  const counted = await listUsers(db, { limit: 5, total: 'true', name: 'name-1' }, { secret }) as KeysetPage
  t.equal(counted.pagination.total, 4, 'name-1 is every seventh of 23 rows from the second')
  const estimated = await listUsers(db, { limit: 5, total: 'estimated' }, { secret }) as KeysetPage
  t.equal(estimated.pagination.totalEstimated, true)
  t.type(estimated.pagination.total, 'number')
})

t.test('limit, page, offset and fields are checked', async (t) => {
  const db = await testDb()
  const bad: Array<[ListParams, string]> = [
    [{ limit: 0 }, 'limit'], [{ limit: 101 }, 'limit'], [{ limit: 1.5 }, 'limit'],
    [{ offset: -1 }, 'offset'], [{ page: 0 }, 'page'], [{ page: 1, offset: 0 }, 'page'],
    [{ cursor: 'x', offset: 0 }, 'cursor'], [{ fields: 'name,password_hash' }, 'fields'],
    [{ sort: 'password_hash' }, 'sort'], [{ sort: '-name', order: 'asc' }, 'order']
  ]
  for (const [params, field] of bad) {
    await t.rejects(listUsers(db, params, { secret }), { name: 'TandemError', statusCode: 400, field }, JSON.stringify(params))
  }
})

t.test('fields= narrows the rows to those columns plus id', async (t) => {
  await insertUsers(3)
  const page = await listUsers(await testDb(), { fields: 'email', sort: 'name' }, { secret }) as KeysetPage
  t.same(page.data.map((r) => Object.keys(r).sort()), [['email', 'id'], ['email', 'id'], ['email', 'id']])
  // The sort column, read for the cursor, is dropped in every paging mode.
  for (const mode of [{ offset: 1 }, { page: 1 }]) {
    const numbered = await listUsers(await testDb(), { fields: 'email', sort: 'name', ...mode }, { secret })
    t.same(numbered.data.map((r) => Object.keys(r).sort()), numbered.data.map(() => ['email', 'id']), JSON.stringify(mode))
  }
  const plain = await userRows(await testDb(), { limit: 2 })
  t.same(plain.map((r) => Object.keys(r).sort()), [['created_at', 'email', 'id', 'name'], ['created_at', 'email', 'id', 'name']])
})

t.test('a list shape is compiled once and filled with each request\'s values', async (t) => {
  await insertUsers(30)
  const recorded = recordSql(await testDb())
  const names = async (name: string, cursor?: string) => {
    const page = await listUsers(recorded.db, { limit: 2, sort: 'created_at', name, cursor }, { secret }) as KeysetPage
    t.ok(page.data.every((row) => row.name === name), `only ${name}`)
    return page
  }
  const one = await names('name-1')
  const two = await names('name-2')
  t.notSame(one.data.map((r) => r.id), two.data.map((r) => r.id), 'each request its own rows')
  t.equal(recorded.statements[0], recorded.statements[1], 'one statement text for both')
  const next = await names('name-2', two.pagination.nextCursor ?? '')
  t.ok(next.data.every((row) => row.id !== two.data[0]?.id && row.id !== two.data[1]?.id), 'the next page goes on')
})

t.test('a shape writes its first LITERAL_LIMITS limits into its text, later ones are parameters, all answer', async (t) => {
  await insertUsers(LITERAL_LIMITS + 6)
  const all = (await userRows(await testDb(), { limit: 100 })).map((row) => row.id)
  const recorded = recordSql(await testDb())
  const limits = [...Array.from({ length: LITERAL_LIMITS + 3 }, (_, i) => i + 1), 1, 2]
  for (const limit of limits) {
    const page = await listUsers(recorded.db, { limit }, { secret }) as KeysetPage
    t.same(page.data.map((row) => row.id), all.slice(0, limit), `limit ${limit}: the first ${limit} users`)
  }
  const written = recorded.statements.map((text) => /limit (\d+|\$\d+)/.exec(text)?.[1])
  t.same(written, limits.map((limit, i) => i < LITERAL_LIMITS || limit <= LITERAL_LIMITS ? String(limit + 1) : '$1'),
    'one more than the limit (to know whether a next page exists), in the text for the first LITERAL_LIMITS, then a parameter')
})

t.test('past MAX_SHAPES, new shapes are compiled per request and still answer', async (t) => {
  const db = await testDb()
  await insertUsers(3)
  const statements = new ShapedStatements()
  for (let i = 0; i <= MAX_SHAPES + 10; i++) {
    // A shape per i (the text differs), values bound as parameters.
    const compiled = statements.compile(`shape ${i}`, [i, 'name-1'], ([n, name]) =>
      db.selectFrom('users').select(sql<number>`${sql.lit(i)} + ${n}`.as('n')).where('name', '=', name as string).limit(1))
    const { rows } = await db.executeQuery<{ n: number }>(compiled)
    if (rows[0]?.n !== 2 * i) t.fail(`shape ${i}: ${JSON.stringify(rows)}`)
  }
  t.equal(statements.size, MAX_SHAPES)
})
