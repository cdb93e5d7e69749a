// The floor the API is measured against: plain node:http and a `pg` pool, no framework, validation,
// authentication, rate limiting or signed cursor. Two answers, each one prepared statement:
// - any GET: the first page of 20 users (one keyset query, JSON.stringify);
// - POST /graphql: the nested GraphQL case's answer, its JSON text written by PostgreSQL (bench/nested.ts).
// Started by bench/run.ts as a process of its own:
//   DATABASE_URL=postgres://… PORT=3001 node --import tsx bench/baseline.ts
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { firstPage, referencePool } from './first-page.js'
import { asksNested, nestedAnswer } from './nested.js'

const pool = referencePool()

function send (response: ServerResponse, status: number, body: string): void {
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) }).end(body)
}

const failed = (response: ServerResponse) => (error: Error) => { send(response, 500, JSON.stringify({ error: error.message })) }

function nested (request: IncomingMessage, response: ServerResponse): void {
  const chunks: Buffer[] = []
  request.on('data', (chunk: Buffer) => chunks.push(chunk))
  request.on('end', () => {
    if (!asksNested(Buffer.concat(chunks).toString('utf8'))) {
      send(response, 400, '{"errors":[{"message":"this server answers the nested query only"}]}')
      return
    }
    nestedAnswer(pool, 'baseline_nested').then((body) => { send(response, 200, body) }, failed(response))
  })
}

const server = createServer((request, response) => {
  if (request.url === '/health') {
    send(response, 200, '{"status":"ok"}')
    return
  }
  if (request.method === 'POST' && request.url === '/graphql') {
    nested(request, response)
    return
  }
  firstPage(pool, 'baseline_users_page').then((page) => { send(response, 200, JSON.stringify(page)) }, failed(response))
})
server.listen(Number(process.env.PORT ?? 3001), process.env.HOST ?? '127.0.0.1')

const close = () => { server.close(); pool.end().catch(() => {}) }
process.once('SIGTERM', close)
process.once('SIGINT', close)
