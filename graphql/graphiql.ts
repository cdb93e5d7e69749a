import { createRequire } from 'node:module'
import { dirname } from 'node:path'
import staticFiles from '@fastify/static'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import { installCommand, listed, missingPackages, requirePackages } from '../plugins/optional-packages.js'

// Mercurius's own GraphiQL page loads React and GraphiQL from a CDN (blank without internet) and
// styles itself inline; this page loads the same builds from the npm packages, served by the API.

/**
 * The policy of the GraphiQL page: scripts, styles and requests from the API only. GraphiQL's
 * stylesheet embeds its fonts and a few images as `data:` URLs. Its dialogs (settings, shortcuts)
 * add an inline `<style>` that locks the page's scrolling, which this policy refuses: the dialogs
 * still open, and the page, one screen high, has nothing to scroll.
 */
export const GRAPHIQL_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "font-src 'self' data:",
  "img-src 'self' data:",
  // Under CSP Level 3, 'self' also covers ws: and wss: to the same host, for subscriptions.
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join('; ')

/** Where the page's files are served, relative to the page (so that it also works behind a path prefix). */
const ASSETS = 'graphiql/assets/'

const require = createRequire(import.meta.url)

/** The built files the page loads, by the name it asks for: [npm package, file in it]. */
const packageFiles = {
  'react.js': ['react', 'umd/react.production.min.js'],
  'react-dom.js': ['react-dom', 'umd/react-dom.production.min.js'],
  'graphiql.js': ['graphiql', 'graphiql.min.js'],
  'graphiql.css': ['graphiql', 'graphiql.min.css']
} as const

/**
 * Renders GraphiQL against `graphql` beside the page (over HTTP, and WebSocket for subscriptions).
 * Layout goes through element.style, which the CSP allows, unlike an inline stylesheet.
 */
const START_SCRIPT = `'use strict'
/* global GraphiQL, React, ReactDOM */
const endpoint = new URL('graphql', window.location.href)
const socket = new URL(endpoint)
socket.protocol = endpoint.protocol === 'https:' ? 'wss:' : 'ws:'
const container = document.getElementById('graphiql')
document.body.style.margin = '0'
container.style.height = '100vh'
const fetcher = GraphiQL.createFetcher({ url: endpoint.href, subscriptionUrl: socket.href })
ReactDOM.createRoot(container).render(React.createElement(GraphiQL, { fetcher, shouldPersistHeaders: true }))
`

const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>GraphiQL</title>
  <meta name="robots" content="noindex">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <link rel="stylesheet" href="${ASSETS}graphiql.css">
</head>
<body>
  <div id="graphiql">Loading GraphiQL…</div>
  <script src="${ASSETS}react.js"></script>
  <script src="${ASSETS}react-dom.js"></script>
  <script src="${ASSETS}graphiql.js"></script>
  <script src="${ASSETS}start.js"></script>
</body>
</html>
`

/** The folder of an installed package. */
const packageDirectory = (name: string): string => dirname(require.resolve(`${name}/package.json`))

/**
 * Whether GraphiQL is served: as `asked`, where `true` without its packages (optional peers of
 * Tandem's) stops the start with one line naming them; unasked, `byDefault` when they are installed,
 * else not, with a warning that says how to have it.
 */
export function graphiqlServed (asked: boolean | undefined, byDefault: boolean, log: FastifyBaseLogger): boolean {
  if (asked === true) requirePackages('graphiql', 'GraphiQL (graphiql: true)', 'pass graphiql: false')
  if (asked !== undefined) return asked
  if (!byDefault) return false
  const missing = missingPackages('graphiql')
  if (missing.length > 0) {
    log.warn(`GraphiQL is not served: ${listed(missing)} ${missing.length === 1 ? 'is' : 'are'} not installed (${installCommand('graphiql', missing)}); graphiql: false leaves it out without this warning`)
  }
  return missing.length === 0
}

/**
 * GraphiQL at `/graphiql`, with everything it loads under `/graphiql/assets/`, served from the
 * installed `graphiql`, `react` and `react-dom` packages: it works without internet access and
 * under a CSP that allows only the API's own scripts and styles. Register it in the scope of
 * `/graphql`, at the application's root, once `graphiqlServed` said yes.
 */
export async function graphiqlPage (app: FastifyInstance): Promise<void> {
  const files = Object.entries(packageFiles).map(([name, [pkg, file]]) => ({ name, file, directory: packageDirectory(pkg) }))
  // Encapsulated: the reply.sendFile decorator stays in here.
  await app.register(async (scope) => {
    await scope.register(staticFiles, { root: packageDirectory('graphiql'), serve: false })
    scope.get('/graphiql', async (_request, reply) => reply
      .header('content-security-policy', GRAPHIQL_CSP)
      .type('text/html; charset=utf-8')
      .send(PAGE))
    scope.get(`/${ASSETS}start.js`, async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(START_SCRIPT))
    for (const { name, file, directory } of files) {
      scope.get(`/${ASSETS}${name}`, async (_request, reply) => reply.sendFile(file, directory))
    }
  })
}
