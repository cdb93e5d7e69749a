// The floor the API is measured against: plain node:http and a `pg` pool, one prepared keyset query
// for the first page of 20 users, JSON.stringify. No framework, validation, authentication, rate
// limiting or signed cursor. Started by bench/run.ts as a process of its own:
//   DATABASE_URL=postgres://… PORT=3001 node --import tsx bench/baseline.ts
import { createServer } from 'node:http'
import pg from 'pg'

const LIMIT = 20
const INT8 = 20

// Ids as numbers, as the API's pool returns them.
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.POOL_SIZE ?? 20),
  types: { getTypeParser: ((oid: number, format?: 'text' | 'binary') => oid === INT8 ? Number : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser }
})

const firstPage = {
  name: 'baseline_users_page',
  text: 'select id, name, email, created_at from users where id > $1 order by id limit $2'
}

interface UserRow { id: number, name: string, email: string, created_at: Date }

const server = createServer((request, response) => {
  if (request.url === '/health') {
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}')
    return
  }
  pool.query<UserRow>({ ...firstPage, values: [0, LIMIT + 1] }).then(({ rows }) => {
    const hasMore = rows.length > LIMIT
    const data = rows.slice(0, LIMIT)
    const body = JSON.stringify({ data, pagination: { hasMore, nextCursor: hasMore ? String(data[data.length - 1]?.id) : null, limit: LIMIT } })
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body)
  }, (error: Error) => {
    response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: error.message }))
  })
})

server.listen(Number(process.env.PORT ?? 3001), process.env.HOST ?? '127.0.0.1')

const close = () => { server.close(); pool.end().catch(() => {}) }
process.once('SIGTERM', close)
process.once('SIGINT', close)
