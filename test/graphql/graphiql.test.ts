// GraphiQL (CONTRACT §12): served with everything it loads by the API itself, under a CSP that
// allows only the API's own scripts and styles, and rendered by a real browser without internet.
import { execFile } from 'node:child_process'
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { promisify } from 'node:util'
import { Script } from 'node:vm'
import type { FastifyInstance } from 'fastify'
import t from 'tap'
import { GRAPHIQL_CSP } from '../../graphql/graphiql.js'
import { build } from '../helpers/app.js'

const execFileAsync = promisify(execFile)
const PAGE = 'http://127.0.0.1/graphiql'

/** Every URL the page's HTML loads (scripts and stylesheets), as the browser resolves them. */
async function pageAssets (app: FastifyInstance): Promise<URL[]> {
  const page = await app.inject({ url: '/graphiql' })
  return [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map(([, reference]) => new URL(reference ?? '', PAGE))
}

t.test('/graphiql is an HTML page with a CSP of its own: scripts, styles and requests from the API only', async (t) => {
  const app = await build(t)
  const page = await app.inject({ url: '/graphiql' })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  t.equal(page.headers['content-security-policy'], GRAPHIQL_CSP)
  t.match(GRAPHIQL_CSP, /script-src 'self';/)
  t.match(GRAPHIQL_CSP, /style-src 'self';/)
  t.notMatch(GRAPHIQL_CSP, /unsafe-|https?:/, 'no inline code, no other host')
  t.notMatch(page.body, /<script>|<style|style="|\son[a-z]+=/, 'no inline script, style or handler')
})

t.test('every asset the page references is served by the API with its content type', async (t) => {
  const app = await build(t)
  const assets = await pageAssets(app)
  t.same(assets.map((url) => url.pathname), [
    '/graphiql/assets/graphiql.css',
    '/graphiql/assets/react.js',
    '/graphiql/assets/react-dom.js',
    '/graphiql/assets/graphiql.js',
    '/graphiql/assets/start.js'
  ])
  for (const url of assets) {
    t.equal(url.origin, new URL(PAGE).origin, `${url.pathname} comes from the API`)
    const res = await app.inject({ url: url.pathname })
    t.equal(res.statusCode, 200, url.pathname)
    if (url.pathname.endsWith('.css')) {
      t.match(res.headers['content-type'], /^text\/css/, url.pathname)
      t.match(res.body, /\.graphiql-container/, `${url.pathname} is GraphiQL's stylesheet`)
    } else {
      t.match(res.headers['content-type'], /^(text|application)\/javascript/, url.pathname)
      t.doesNotThrow(() => new Script(res.body), `${url.pathname} is JavaScript`)
    }
  }
})

t.test('GraphiQL and its assets: outside production, or when enabled', async (t) => {
  const production = await build(t, { nodeEnv: 'production' })
  for (const url of ['/graphiql', '/graphiql/assets/graphiql.js', '/graphiql/assets/start.js']) {
    t.equal((await production.inject({ url })).statusCode, 404, `${url} in production`)
  }
  const enabled = await build(t, { nodeEnv: 'production', graphql: { graphiql: true } })
  t.equal((await enabled.inject({ url: '/graphiql' })).statusCode, 200, 'production with graphiql: true')
  t.equal((await enabled.inject({ url: '/graphiql/assets/graphiql.js' })).statusCode, 200)
  const disabled = await build(t, { graphql: { graphiql: false } })
  t.equal((await disabled.inject({ url: '/graphiql' })).statusCode, 404, 'development with graphiql: false')
})

/** Chromium's executable on PATH, if installed (CI installs it: .ci/run). */
function chromium (): string | undefined {
  for (const directory of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      const path = join(directory, name)
      try {
        accessSync(path, constants.X_OK)
        return path
      } catch {}
    }
  }
  return undefined
}

const browser = chromium()

t.test('a headless browser renders GraphiQL with no network beyond the API and no CSP violation', {
  skip: browser === undefined ? 'needs chromium (apt-get install chromium), which CI installs' : false
}, async (t) => {
  const app = await build(t)
  const requests: string[] = []
  app.server.on('request', (request: { method: string, url: string }) => { requests.push(`${request.method} ${request.url}`) })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  const port = typeof address === 'object' && address !== null ? address.port : 0
  const profile = mkdtempSync(join(tmpdir(), 'tandem-chromium-'))
  t.teardown(() => rmSync(profile, { recursive: true, force: true }))

  const { stdout, stderr } = await execFileAsync(browser ?? 'chromium', [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    `--user-data-dir=${profile}`,
    // Every host but the API's fails to resolve: the page must need nothing else.
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    // The page's console (where CSP violations are reported) goes to stderr.
    '--enable-logging=stderr',
    '--v=0',
    // Lets GraphiQL's first requests (the schema's introspection) finish before the DOM is read.
    '--virtual-time-budget=10000',
    '--dump-dom',
    `http://127.0.0.1:${port}/graphiql`
  ], { timeout: 90_000, maxBuffer: 32 * 1024 * 1024 })

  t.match(stdout, /class="graphiql-container"/, 'GraphiQL rendered')
  t.notMatch(stdout, /Loading GraphiQL/, 'the placeholder was replaced')
  const console = stderr.split('\n').filter((line) => line.includes(':CONSOLE'))
  t.same(console.filter((line) => /Content Security Policy|Refused to/i.test(line)), [], 'no CSP violation')
  for (const url of ['/graphiql', '/graphiql/assets/react.js', '/graphiql/assets/react-dom.js', '/graphiql/assets/graphiql.js', '/graphiql/assets/graphiql.css', '/graphiql/assets/start.js']) {
    t.ok(requests.includes(`GET ${url}`), `the browser loaded ${url} from the API`)
  }
  t.ok(requests.includes('POST /graphql'), 'GraphiQL asked /graphql for the schema (connect-src allows it)')
})
