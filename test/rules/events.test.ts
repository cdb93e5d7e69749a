// Telling subscribers (rules/events.ts): both styles answer a write without waiting on the event bus,
// and a bus that fails does not undo the write.
import t from 'tap'
import { apiClient, body, build, graphql, signedIn } from '../helpers/app.js'

type App = Awaited<ReturnType<typeof build>>
type Emit = App['tandemEvents']['emitter']['emit']

/** The answer, or 'no answer' when there is none within 3 s. */
async function within3s<T> (answer: Promise<T>): Promise<T | 'no answer'> {
  return Promise.race([answer, new Promise<'no answer'>((resolve) => setTimeout(() => resolve('no answer'), 3000).unref())])
}

for (const [bus, emit] of [
  ['never answers (a stalled Redis)', (() => {}) as unknown as Emit],
  ['fails', ((_message, done) => { done?.(new Error('the bus is down')) }) as Emit],
  ['throws while it is told (a listener or an encoder that throws)', (() => { throw new Error('could not encode') }) as unknown as Emit]
] as const) {
  t.test(`a post is created in both styles while the event bus ${bus}`, async (t) => {
    const app = await build(t)
    const me = await signedIn(app)
    app.tandemEvents.emitter.emit = emit

    const rest = await within3s(apiClient(app, me.headers)('POST', '/posts', { title: 'REST', content: 'c' }))
    t.not(rest, 'no answer', 'REST answers')
    if (rest !== 'no answer') t.equal(rest.statusCode, 201)
    const answered = await within3s(graphql(app, `mutation { createPost(input: { authorId: "${me.id}", title: "GraphQL", content: "c" }) { title } }`, { headers: me.headers }))
    t.not(answered, 'no answer', 'GraphQL answers')
    if (answered !== 'no answer') t.same(answered, { statusCode: 200, data: { createPost: { title: 'GraphQL' } } })

    const titles = await app.db.selectFrom('posts').select('title').where('author_id', '=', me.id).orderBy('id').execute()
    t.same(titles.map((row) => row.title), ['REST', 'GraphQL'], 'both posts are written')
    t.ok(body(await apiClient(app, me.headers)('GET', '/posts')), 'the API still serves')
  })
}
