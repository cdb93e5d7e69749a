import { OperationNodeTransformer, sql, type KyselyPlugin, type ValueNode } from 'kysely'
import pg from 'pg'
import t, { type Test } from 'tap'
import { connect, type Db } from '../../../db/connect.js'
import { checkKysely, checkPg, installed } from '../../../db/internals/index.js'
import type { KeysetPage } from '../../../db/pagination.js'
import { firstChildren, rowsById } from '../../../db/relations.js'
import { listUsers } from '../../helpers/users.js'
import { throwAwayDb, wireDatabase } from '../../helpers/database.js'

const secret = 'a-secret-of-at-least-thirty-two-characters'

/** The TandemWarnings the process emits while the test runs. */
function tandemWarnings (t: Test): string[] {
  const seen: string[] = []
  const listener = (warning: Error) => { if (warning.name === 'TandemWarning') seen.push(warning.message) }
  process.on('warning', listener)
  t.teardown(() => { process.off('warning', listener) })
  return seen
}

// Warnings are emitted on the next tick.
const warningsOut = async (): Promise<void> => { await new Promise((resolve) => setImmediate(resolve)) }

async function someUsers (db: Db): Promise<void> {
  await db.insertInto('users').values(Array.from({ length: 7 }, (_, i) => ({ name: `user-${i}`, email: `user-${i}@example.com` }))).execute()
  await db.insertInto('posts').values([1, 1, 2, 3, 3, 3].map((author, i) => ({ author_id: author, title: `post ${i}`, content: `by ${author}` }))).execute()
}

/** What the data layer answers for `someUsers`, through its compiled reads. */
async function answers (db: Db): Promise<unknown> {
  const first = await listUsers(db, { limit: 3 }, { secret }) as KeysetPage
  const next = await listUsers(db, { limit: 3, cursor: first.pagination.nextCursor ?? '' }, { secret }) as KeysetPage
  const posts = await firstChildren(db, 'posts', 'author_id', [1, 2, 3, 4], ['id', 'author_id', 'title'], 2)
  const names = await rowsById(db, 'users', [2, 5], ['id', 'name'])
  return {
    pages: [first.data, next.data].map((rows) => rows.map((row) => row.name)),
    posts: [...posts].map(([author, rows]) => [author, rows.map((row) => row.title)]),
    names: [...names].map(([id, row]) => [id, row.name])
  }
}

const expected = {
  pages: [['user-0', 'user-1', 'user-2'], ['user-3', 'user-4', 'user-5']],
  posts: [[1, ['post 0', 'post 1']], [2, ['post 2']], [3, ['post 3', 'post 4']], [4, []]],
  names: [[2, 'user-1'], [5, 'user-4']]
}

t.test('the installed pg and Kysely behave as the data layer assumes: no warning', async (t) => {
  const warnings = tandemWarnings(t)
  const db = await connect({ databaseUrl: await wireDatabase(t), poolSize: 1 })
  t.teardown(() => db.destroy())
  const pool = new pg.Pool({ connectionString: await wireDatabase(t), max: 1 })
  t.teardown(() => pool.end())
  t.ok(await checkPg(pool), 'pg: its Query has what shaped rows use, and makes the same rows with them')
  t.ok(checkKysely(db), 'Kysely carries placeholders through compilation')
  await someUsers(db)
  t.same(await answers(db), expected, 'the data layer answers')
  await warningsOut()
  t.same(warnings, [], 'and nothing was reported')
})

t.test('a pg whose Query changed: one warning naming pg, statements on pg\'s public path, the same answers', async (t) => {
  const warnings = tandemWarnings(t)
  const original = installed.Query
  // A pg in which a field that shaped rows write is gone.
  installed.Query = class extends pg.Query {
    constructor (text: string, values: unknown[]) {
      super(text, values)
      delete (this as { _canceledDueToError?: unknown })._canceledDueToError
    }
  } as typeof pg.Query
  t.teardown(() => { installed.Query = original })

  const db = await connect({ databaseUrl: await wireDatabase(t), poolSize: 1 })
  t.teardown(() => db.destroy())
  await warningsOut()
  t.equal(warnings.length, 1, 'one warning when the database is opened')
  t.match(warnings[0], /^pg \d+\.\d+\.\d+: Query's _canceledDueToError, which Tandem's shaped rows rely on, is not what it was; statements run through pg's public client\.query instead/)
  await someUsers(db)
  t.same(await answers(db), expected, 'the data layer answers as before')
  const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_prepared_statements where name like 'tandem\\_%'`.execute(db)
  t.ok((rows[0]?.n ?? 0) > 0, 'statements are still prepared, by pg\'s public { name, text, values }')
  await warningsOut()
  t.equal(warnings.length, 1, 'and nothing more was reported')
})

/** A Kysely plugin that copies every object value, as a Kysely that no longer carries values through untouched would. */
class CopyingValues extends OperationNodeTransformer {
  protected override transformValue (node: ValueNode): ValueNode {
    const value = node.value
    return super.transformValue(typeof value === 'object' && value !== null ? { ...node, value: structuredClone(value) } : node)
  }
}
const copyingValues: KyselyPlugin = {
  transformQuery: (args) => new CopyingValues().transformNode(args.node),
  transformResult: async (args) => args.result
}

t.test('a Kysely that copies values: one warning naming kysely, statements compiled per request, the same answers', async (t) => {
  const warnings = tandemWarnings(t)
  const db = await throwAwayDb(t)
  await someUsers(db)
  const copying = db.withPlugin(copyingValues)
  t.same(await answers(copying), expected, 'each shape compiled from its values answers')
  t.same(await answers(copying), expected, 'and again, now that its shapes are known')
  await warningsOut()
  t.equal(warnings.length, 1, 'one warning')
  t.match(warnings[0], /^kysely \d+\.\d+\.\d+: a statement compiled over placeholders differs from the one compiled from its values; that statement is compiled per request instead/)

  t.notOk(checkKysely(copying), 'the start check sees it too')
  await warningsOut()
  t.equal(warnings.length, 2)
  t.match(warnings[1], /^kysely \d+\.\d+\.\d+: .*; statements are compiled per request instead/)
  t.same(await answers(db.withPlugin({ transformQuery: (args) => args.node, transformResult: async (args) => args.result })), expected,
    'after which every new shape is compiled per request, and answers')
})
