import { Validator } from '@seriousme/openapi-schema-validator'
import t from 'tap'
import { body, build } from '../helpers/app.js'

t.test('/openapi.json is a valid OpenAPI 3.1 document of every versioned route', async (t) => {
  const app = await build(t)
  const res = await app.inject({ url: '/openapi.json' })
  t.equal(res.statusCode, 200)
  const document = body<{ openapi: string, paths: Record<string, Record<string, { responses: Record<string, unknown> }>> }>(res)
  t.equal(document.openapi, '3.1.0')
  const result = await new Validator().validate(document as never)
  t.ok(result.valid, JSON.stringify(result.errors ?? '').slice(0, 2000))

  const paths = Object.keys(document.paths)
  t.ok(paths.includes('/api/v1/users'))
  t.ok(paths.includes('/api/v1/users/{id}'))
  t.notOk(paths.some((p) => p.startsWith('/api/users')), 'the unversioned aliases are not listed twice')
  t.notOk(paths.includes('/health'), 'operational routes are left out')
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const codes = Object.keys(operation.responses)
      t.ok(codes.some((c) => c.startsWith('2')), `${method} ${path} documents its success`)
      t.ok(codes.some((c) => c.startsWith('4')), `${method} ${path} documents its errors`)
    }
  }
})

t.test('regression: Idempotency-Key was missing from the document; every replayable POST names it', async (t) => {
  const app = await build(t)
  type Operation = { parameters?: Array<{ name: string, in: string, schema?: { maxLength?: number } }> }
  const document = body<{ paths: Record<string, Record<string, Operation>> }>(await app.inject({ url: '/openapi.json' }))
  const header = (path: string) => document.paths[path]?.post?.parameters?.find((p) => p.in === 'header' && p.name === 'idempotency-key')
  for (const path of ['/api/v1/users', '/api/v1/posts', '/api/v1/orders', '/api/v1/orders/{id}/cancel']) {
    t.equal(header(path)?.schema?.maxLength, 255, `POST ${path}`)
  }
  t.equal(header('/api/v1/auth/login'), undefined, 'not on login, whose answer is never replayed')
})

t.test('/docs renders a page to read the document', async (t) => {
  const app = await build(t)
  const res = await app.inject({ url: '/docs' })
  t.ok([200, 302].includes(res.statusCode))
  const page = res.statusCode === 302 ? await app.inject({ url: '/docs/' + String(res.headers.location ?? '').replace(/^.*\//, '') }) : res
  t.match(page.body, /swagger/i)
})
