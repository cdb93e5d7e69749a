// A host's own queries on its tables through `app.db`, widened to them (Kysely's withTables).
import t from 'tap'
import { apiClient, build, signedIn } from '../helpers/app.js'
import '../helpers/source-package.js'

const { labels, labelPost, migrations } = await import('../../examples/labels.js')

t.test('the example labels a post with its own typed query, and the API then lists it', async (t) => {
  const app = await build(t, { resources: [labels], migrations })
  const ann = await signedIn(app, { name: 'Ann' })
  const asAnn = apiClient(app, ann.headers)
  const label = (await asAnn('POST', '/labels', { name: 'read later' })).json() as { id: number }
  const post = (await asAnn('POST', '/posts', { title: 'A post', content: 'Its text' })).json() as { id: number }
  await labelPost(app, label.id, post.id)
  await labelPost(app, label.id, post.id)
  const posts = await asAnn('GET', `/labels/${label.id}/posts`)
  t.equal(posts.statusCode, 200)
  t.match(posts.json(), { data: [{ id: post.id, title: 'A post' }] })
  t.equal((posts.json() as { data: unknown[] }).data.length, 1, 'labelling twice is harmless')
})
