// Each test file of `npm test`'s build as one bundle with the modules it imports (scripts/test.mjs).
// A test process otherwise spends most of its start finding, reading and compiling about a thousand
// module files, one at a time (Node 20 has no compile cache): bundled, it reads a few large files.
//
// A bundled module still sees the place it was loaded from before: its `import.meta.url` (`.dirname`,
// `.filename`), `__dirname` and `__filename` are written into it as its own file's, so that it finds
// its files (SDL, migrations, WebAssembly, static assets, worker scripts). What it resolves at run time
// (`require` of a computed name, `import.meta.resolve`) resolves from the bundle's folder, whose
// node_modules is the checkout's. Left out, and loaded from node_modules as usual: packages with
// native code, those that another package patches when they are required (OpenTelemetry's pg
// instrumentation), tap (which a test shares with tap's own plugins), and what this project imports
// only when a feature is used. A package both bundled and required by one left out is loaded twice
// (kysely, by kysely-pglite-dialect; @opentelemetry/api, whose state is global by design).
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
function ownLocation (dir, final, transform) {
  return {
    name: 'own-location',
    setup (build) {
      // What this project loads only when a feature is used (ioredis, OpenTelemetry, PGlite, …) stays
      // a module of its own, loaded by Node when it is used: esbuild would hand a CommonJS package's
      // exports to an `import()` in a chunk as its default export only.
      build.onResolve({ filter: /^[^./]/ }, ({ path, kind, importer }) => kind === 'dynamic-import' && importer.startsWith(dir + sep) ? { path, external: true } : undefined)
      build.onLoad({ filter: /\.[cm]?js$/ }, async ({ path }) => {
        let contents = await readFile(path, 'utf8')
        if (/\bimport\.meta\b|\b__(dirname|filename)\b/.test(contents)) {
          const runsAt = path.startsWith(dir + sep) ? join(final, relative(dir, path)) : path
          // As code, not text: a name a module declares itself, or one in a string, stays as it is.
          const own = {
            'import.meta.url': JSON.stringify(pathToFileURL(runsAt).href),
            'import.meta.dirname': JSON.stringify(dirname(runsAt)),
            'import.meta.filename': JSON.stringify(runsAt),
            __dirname: JSON.stringify(dirname(runsAt)),
            __filename: JSON.stringify(runsAt)
          }
          contents = (await transform(contents, { loader: 'js', define: own, sourcefile: path, logLevel: 'silent' })).code
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
  const { build, transform } = await import('esbuild')
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
    // Every module imported runs, as under Node: a package.json's `sideEffects: false` (this project's
    // says so, for the bundlers of its users) would have esbuild drop an import made for what it does.
    ignoreAnnotations: true,
    banner: { js: BANNER },
    plugins: [ownLocation(dir, final, transform)],
    logLevel: 'warning'
  })
}
