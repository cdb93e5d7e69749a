// Each test file of `npm test`'s build as one bundle with the modules it imports (scripts/test.mjs).
// A test process otherwise spends most of its start finding, reading and compiling about a thousand
// module files, one at a time (Node 20 has no compile cache): bundled, it reads a few large files.
//
// A bundled module still sees the place it was loaded from before: its `import.meta.url`, `__dirname`
// and `__filename` are written into it as the paths of its own file, so that it finds its files (SDL,
// migrations, WebAssembly, static assets, worker scripts) and resolves packages from there. Left out,
// and loaded from node_modules as usual: packages with native code, those that another package patches
// when they are required (OpenTelemetry's pg instrumentation), tap (which a test shares with tap's
// own plugins), and what this project imports only when a feature is used.
//
// `TANDEM_TEST_BUNDLE=0 npm test` runs the tests unbundled; CI runs one suite so.
import { readFile } from 'node:fs/promises'
import { dirname, join, relative, sep } from 'node:path'
import { pathToFileURL } from 'node:url'

const EXTERNAL = ['tap', '@tapjs/*', '@node-rs/*', 'pg', 'pg-pool', 'pg-native', '@opentelemetry/instrumentation-pg', 'typescript', 'esbuild']

// An ESM bundle has no `require`; the CommonJS modules in it call it for Node's built-ins and for the
// packages left out, which it resolves from the bundle's folder (node_modules is the checkout's).
const BANNER = "import { createRequire as __tandemCreateRequire } from 'node:module'; const require = __tandemCreateRequire(import.meta.url);"

/** Writes into each module its own location: its file's, in the build's final place for the build's own files. */
function ownLocation (dir, final) {
  return {
    name: 'own-location',
    setup (build) {
      // What this project loads only when a feature is used (ioredis, OpenTelemetry, PGlite, …) stays
      // a module of its own, loaded by Node when it is used: esbuild would hand a CommonJS package's
      // exports to an `import()` in a chunk as its default export only.
      build.onResolve({ filter: /^[^./]/ }, ({ path, kind, importer }) => kind === 'dynamic-import' && importer.startsWith(dir + sep) ? { path, external: true } : undefined)
      build.onLoad({ filter: /\.[cm]?js$/ }, async ({ path }) => {
        let contents = await readFile(path, 'utf8')
        const runsAt = path.startsWith(dir + sep) ? join(final, relative(dir, path)) : path
        if (contents.includes('import.meta.url')) contents = contents.replaceAll('import.meta.url', JSON.stringify(pathToFileURL(runsAt).href))
        if (/\b__(dirname|filename)\b/.test(contents) && !/\b(var|let|const)\s+__(dirname|filename)\b/.test(contents)) {
          // After a `#!` line, which must stay the first.
          const shebang = /^#!.*\n/.exec(contents)?.[0] ?? ''
          contents = `${shebang}var __dirname = ${JSON.stringify(dirname(runsAt))}, __filename = ${JSON.stringify(runsAt)};\n${contents.slice(shebang.length)}`
        }
        return { contents, loader: 'js', resolveDir: dirname(path) }
      })
    }
  }
}

/**
 * Replaces the transpiled `tests` (paths relative to `dir`, the build being made, which will be found
 * at `final`) with bundles.
 */
export async function bundleTests ({ dir, final, tests }) {
  const { build } = await import('esbuild')
  await build({
    entryPoints: tests.map((file) => join(dir, file)),
    outdir: dir,
    outbase: dir,
    allowOverwrite: true,
    bundle: true,
    splitting: true,
    chunkNames: 'test/.chunks/[name]-[hash]',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: EXTERNAL,
    // Not the checkout's tsconfig.json, whose `paths` send `tandem-api` to the TypeScript sources: in the
    // build the name is the build's own package (its package.json's `exports`), as Node resolves it.
    tsconfigRaw: {},
    banner: { js: BANNER },
    plugins: [ownLocation(dir, final)],
    logLevel: 'warning'
  })
}
