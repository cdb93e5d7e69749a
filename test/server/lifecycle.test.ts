// Graceful shutdown of the real server: SIGTERM in the middle of a burst of writes.
import Fastify from 'fastify'
import { createClient } from 'graphql-ws'
import t from 'tap'
import WebSocket from 'ws'
import { connect } from '../../db/connect.js'
import drain from '../../plugins/drain.js'
import { migratedDataDir } from '../helpers/database.js'
import { freshDatabase, runId, startServer } from '../helpers/processes.js'

const BURST = 200

type Outcome = { status: number, body: { id?: number, title?: string }, afterSignal: boolean } | { error: string }

t.test('on SIGTERM the server finishes what it acknowledged, closes subscriptions and the database, and exits 0', async (t) => {
  // The database must outlive the process to be checked afterwards: a directory on disk, or a
  // fresh database on the DATABASE_URL server.
  const serverUrl = process.env.DATABASE_URL
  let database: { databaseUrl: string } | { dataDir: string }
  if (serverUrl === undefined || serverUrl === '') {
    database = { dataDir: await migratedDataDir(t) }
  } else {
    database = { databaseUrl: await freshDatabase(t, serverUrl) }
  }
  const server = await startServer(t, {
    ...('dataDir' in database ? { DATA_DIR: database.dataDir } : { DATABASE_URL: database.databaseUrl }),
    LOG_LEVEL: 'info',
    RATE_LIMIT_MAX: '100000'
  })
  const run = runId()
  const post = (path: string, payload: unknown, headers: Record<string, string> = {}) => fetch(`${server.url}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(payload)
  })

  // A live subscription, proven live by receiving one event.
  const email = `subscriber-${run}@example.com`
  t.equal((await post('/api/v1/users', { name: 'Subscriber', email, password: 'correct horse battery' })).status, 201)
  const { accessToken } = await (await post('/api/v1/auth/login', { email, password: 'correct horse battery' })).json() as { accessToken: string }
  const authorization = `Bearer ${accessToken}`
  let subscriptionEnded: () => void = () => {}
  const ended = new Promise<void>((resolve) => { subscriptionEnded = resolve })
  let firstEvent: () => void = () => {}
  const received = new Promise<void>((resolve) => { firstEvent = resolve })
  const client = createClient({ url: `${server.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, retryAttempts: 0, connectionParams: { authorization } })
  t.teardown(() => client.dispose())
  client.subscribe({ query: 'subscription { postCreated { title } }' }, {
    next: () => firstEvent(),
    error: () => subscriptionEnded(),
    complete: () => subscriptionEnded()
  })
  // The subscription is registered once the server has acknowledged the connection; post until
  // an event arrives (the first post may come before the subscription is in place).
  for (let attempt = 0; ; attempt++) {
    await post('/api/v1/posts', { title: `before the burst ${attempt}`, content: 'c' }, { authorization })
    const arrived = await Promise.race([received.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 500))])
    if (arrived) break
    if (attempt > 40) throw new Error('the subscription never received an event')
  }

  // The burst is one user's writes: sign-ups would meet the per-address limit on attempts.
  let signalled = false
  const outcomes: Outcome[] = await Promise.all(Array.from({ length: BURST }, async (_, i): Promise<Outcome> => {
    try {
      const res = await post('/api/v1/posts', { title: `burst-${run}-${i}`, content: 'c' }, { authorization })
      const outcome = { status: res.status, body: await res.json() as { id?: number, title?: string }, afterSignal: signalled }
      if (res.status === 201 && !signalled) {
        signalled = true
        server.child.kill('SIGTERM')
      }
      return outcome
    } catch (error) {
      return { error: String((error as Error).cause ?? error) }
    }
  }))
  t.ok(signalled, 'SIGTERM was sent during the burst')

  // Once it is closing, a new request is not served (503, or the connection is refused).
  const late = await fetch(`${server.url}/health`).then((res) => res.status, () => 'refused')
  t.not(late, 200, 'a request made after SIGTERM is not served')

  const { code, signal, stderr } = await server.exited
  t.equal(code, 0, 'exits 0', { stderr, stdout: server.stdout().split('\n').filter((line) => !line.includes('"reqId"')).join('\n') })
  t.equal(signal, null)
  t.match(server.stdout(), /"msg":"closing"/, 'it logged that it was closing')
  await ended
  t.pass('the subscription was closed by the server')

  const acknowledged = outcomes.filter((o): o is Extract<Outcome, { status: number }> => 'status' in o && o.status === 201)
  const refused = outcomes.filter((o) => 'status' in o && o.status !== 201)
  t.ok(acknowledged.length > 0)
  t.same(refused.filter((o) => 'status' in o && o.status !== 503), [], 'a write is either done (201) or refused as the server closes (503)')

  const db = await connect(database)
  t.teardown(() => db.destroy())
  const rows = await db.selectFrom('posts').select(['id', 'title']).where('title', 'like', `burst-${run}-%`).execute()
  const stored = new Map(rows.map((row) => [row.title, Number(row.id)]))
  const lost = acknowledged.filter((o) => stored.get(o.body.title ?? '') !== o.body.id)
  t.same(lost, [], 'every acknowledged write is in the database')
  t.comment(`${acknowledged.length} acknowledged (${acknowledged.filter((o) => o.afterSignal).length} after SIGTERM was sent), ` +
    `${refused.length} refused, ${outcomes.length - acknowledged.length - refused.length} not connected; ${rows.length} rows`)
})

t.test('regression: connections busy when closing begins no longer hold the shutdown until keepAliveTimeout', async (t) => {
  // Without the drain plugin, close() waited for the keep-alive connections of the responses being
  // sent at that moment: 72 s by default; here keepAliveTimeout is 10 minutes, past the test's timeout.
  const app = Fastify({ keepAliveTimeout: 600_000 })
  await app.register(drain)
  let closingBegan: () => void = () => {}
  const closing = new Promise<void>((resolve) => { closingBegan = resolve })
  app.addHook('preClose', async () => { closingBegan() })
  // Answers spread over a few milliseconds, so that some are being sent when closing begins.
  let answered = 0
  app.post('/quick', async () => {
    await new Promise((resolve) => setTimeout(resolve, answered++ % 20))
    return { quick: true }
  })
  app.get('/held', async () => {
    await closing
    return { held: true }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const address = app.server.address()
  const url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`

  const held = fetch(`${url}/held`)
  let closed: Promise<void> | undefined
  const burst = await Promise.all(Array.from({ length: 50 }, async () => {
    try {
      const res = await fetch(`${url}/quick`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
      await res.arrayBuffer()
      closed ??= app.close()
      return res.status
    } catch {
      return 'not connected'
    }
  }))
  t.ok(burst.includes(200))
  const res = await held
  t.equal(res.status, 200, 'a request in flight when closing began is answered')
  t.equal(res.headers.get('connection'), 'close', 'and told that its connection closes')
  await res.arrayBuffer()
  await closed
  t.pass('app.close() finished while the clients kept their keep-alive pools')
})
