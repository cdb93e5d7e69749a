import fc from 'fast-check'
import t from 'tap'
import { authHeaders, build, graphql } from '../helpers/app.js'

// Random nested queries — aliases, limits, inline fragments, the same relation asked twice — are
// answered exactly as an oracle computes them from the tables, compiled by graphql-jit or not.

type TypeName = 'User' | 'Post' | 'Comment'
interface Field { name: string, alias?: string, limit?: number, inline: boolean, selection?: Field[] }
type Row = Record<string, unknown> & { id: number }

const RUNS = 60
const SCALARS: Record<TypeName, string[]> = {
  User: ['id', 'name', 'email', 'createdAt'],
  Post: ['id', 'title', 'content', 'createdAt', 'updatedAt'],
  Comment: ['id', 'text', 'createdAt']
}
const RELATIONS: Record<TypeName, Record<string, { type: TypeName, list: boolean }>> = {
  User: { posts: { type: 'Post', list: true } },
  Post: { author: { type: 'User', list: false }, comments: { type: 'Comment', list: true } },
  Comment: { author: { type: 'User', list: false }, post: { type: 'Post', list: false } }
}

/** A small deterministic generator, so that a failing seed reproduces. */
function generator (seed: number): (n: number) => number {
  let state = seed >>> 0
  return (n) => {
    state = (state + 0x6D2B79F5) >>> 0
    let x = Math.imul(state ^ (state >>> 15), 1 | state)
    x ^= x + Math.imul(x ^ (x >>> 7), 61 | x)
    return (((x ^ (x >>> 14)) >>> 0) % n)
  }
}

function randomSelection (random: (n: number) => number, type: TypeName, depth: number, names: { next: number }): Field[] {
  const scalars = SCALARS[type]
  const fields: Field[] = [{ name: scalars[random(scalars.length)] as string, inline: random(5) === 0 }]
  if (random(2) === 0) fields.push({ name: scalars[random(scalars.length)] as string, alias: `s${names.next++}`, inline: false })
  if (depth >= 3) return fields
  for (const [name, relation] of Object.entries(RELATIONS[type])) {
    const times = random(4) === 0 ? 2 : random(2)
    for (let i = 0; i < times; i++) {
      fields.push({
        name,
        ...(times > 1 || random(3) === 0 ? { alias: `r${names.next++}` } : {}),
        ...(relation.list && random(4) !== 0 ? { limit: 1 + random(3) } : {}),
        inline: random(5) === 0,
        selection: randomSelection(random, relation.type, depth + 1, names)
      })
    }
  }
  return fields
}

function print (type: TypeName, fields: Field[]): string {
  return '{ ' + fields.map((field) => {
    const target = RELATIONS[type][field.name]?.type
    const text = `${field.alias === undefined ? '' : field.alias + ': '}${field.name}${field.limit === undefined ? '' : `(limit: ${field.limit})`}` +
      (field.selection === undefined || target === undefined ? '' : ' ' + print(target, field.selection))
    return field.inline ? `... on ${type} { ${text} }` : text
  }).join(' ') + ' }'
}

interface Tables { users: Row[], posts: Row[], comments: Row[] }

const iso = (value: unknown) => (value as Date).toISOString()
// The caller (user 1, not an administrator) reads its own email only: null for every other user, at any depth.
const VIEWER = 1
const SCALAR_VALUE: Record<string, (row: Row) => unknown> = {
  id: (row) => String(row.id),
  name: (row) => row.name,
  email: (row) => row.id === VIEWER ? row.email : null,
  title: (row) => row.title,
  content: (row) => row.content,
  text: (row) => row.text,
  createdAt: (row) => iso(row.created_at),
  updatedAt: (row) => iso(row.updated_at)
}

function related (tables: Tables, type: TypeName, row: Row, field: Field): Row | Row[] {
  const byId = (rows: Row[]) => [...rows].sort((a, b) => a.id - b.id)
  const first = (rows: Row[]) => byId(rows).slice(0, field.limit ?? 20)
  if (type === 'User') return first(tables.posts.filter((p) => p.author_id === row.id))
  if (field.name === 'comments') return first(tables.comments.filter((c) => c.post_id === row.id))
  if (field.name === 'post') return tables.posts.find((p) => p.id === row.post_id) as Row
  return tables.users.find((u) => u.id === row.author_id) as Row
}

/** What GraphQL must answer for `row` of `type` and `fields`: computed from the tables alone. */
function expected (tables: Tables, type: TypeName, row: Row, fields: Field[]): Record<string, unknown> {
  const answer: Record<string, unknown> = {}
  for (const field of fields) {
    const key = field.alias ?? field.name
    const relation = RELATIONS[type][field.name]
    if (relation === undefined) {
      answer[key] = SCALAR_VALUE[field.name]?.(row)
      continue
    }
    const value = related(tables, type, row, field)
    answer[key] = Array.isArray(value)
      ? value.map((child) => expected(tables, relation.type, child, field.selection ?? []))
      : expected(tables, relation.type, value, field.selection ?? [])
  }
  return answer
}

t.test('random nested queries get exactly the rows their relations, limits and aliases ask for', async (t) => {
  const app = await build(t, { graphqlMaxComplexity: 1_000_000 })
  const jitted = await build(t, { graphqlMaxComplexity: 1_000_000, graphql: { jit: 1 } })
  const headers = await authHeaders(app, { id: VIEWER })
  const db = app.db
  const random = generator(7)
  const users = await db.insertInto('users')
    .values(Array.from({ length: 6 }, (_, i) => ({ name: `User ${i}`, email: `u${i}@example.com` }))).returning('id').execute()
  const posts = await db.insertInto('posts')
    .values(users.flatMap(({ id }) => Array.from({ length: random(5) }, (_, i) => ({ author_id: id, title: `P${id}.${i}`, content: `c${i}` }))))
    .returning('id').execute()
  await db.insertInto('comments')
    .values(posts.flatMap(({ id }) => Array.from({ length: random(4) }, (_, i) => ({ post_id: id, author_id: users[random(users.length)]?.id ?? 1, text: `on ${id}: ${i}` }))))
    .execute()
  const tables: Tables = {
    users: await db.selectFrom('users').selectAll().execute() as unknown as Row[],
    posts: await db.selectFrom('posts').selectAll().execute() as unknown as Row[],
    comments: await db.selectFrom('comments').selectAll().execute() as unknown as Row[]
  }

  await fc.assert(fc.asyncProperty(fc.integer(), async (seed) => {
    const random = generator(seed)
    const limit = 1 + random(4)
    const selection = randomSelection(random, 'User', 1, { next: 0 })
    const query = `{ users(limit: ${limit}) ${print('User', selection)} }`
    const want = { users: [...tables.users].sort((a, b) => a.id - b.id).slice(0, limit).map((user) => expected(tables, 'User', user, selection)) }
    // graphql-jit compiles the document at its first run: the second runs the compiled code.
    for (const [name, server] of [['graphql-js', app], ['graphql-jit', jitted], ['graphql-jit, compiled', jitted]] as const) {
      const res = await graphql(server, query, { headers })
      if (res.errors !== undefined || JSON.stringify(res.data) === undefined) t.fail(`${name}: ${query}`, { errors: res.errors })
      t.same(res.data, want, `${name}: ${query}`)
    }
  }), { numRuns: RUNS, seed: 20261122 })
})
