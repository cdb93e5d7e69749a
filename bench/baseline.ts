// The floor the API is measured against: plain node:http and a `pg` pool, one prepared keyset query
// for the first page of 20 users, JSON.stringify. No framework, validation, authentication, rate
// limiting or signed cursor. Started by bench/run.ts as a process of its own:
//   DATABASE_URL=postgres://… PORT=3001 node --import tsx bench/baseline.ts
import { createServer } from 'node:http'
import { firstPage, referencePool } from './first-page.js'

const pool = referencePool()

const server = createServer((request, response) => {
  if (request.url === '/health') {
    response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}')
    return
  }
  firstPage(pool, 'baseline_users_page').then((page) => {
    const body = JSON.stringify(page)
    response.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body)
  }, (error: Error) => {
    response.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: error.message }))
  })
})
server.listen(Number(process.env.PORT ?? 3001), process.env.HOST ?? '127.0.0.1')

const close = () => { server.close(); pool.end().catch(() => {}) }
process.once('SIGTERM', close)
process.once('SIGINT', close)
