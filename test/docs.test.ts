// Every code block of the README, docs/*.md and CONTRIBUTING.md is run or checked, by its language, so
// that an example cannot go stale (CONTRIBUTING.md, "The docs are tested", says how to mark a block):
// `sh` blocks parse, name npm scripts and files that exist, and those that call curl run in order
// against a server started as `npm start` starts it; `graphql` blocks validate against the schema it
// serves; `ts` blocks type-check against these sources in one compile and run. Links between the pages
// must reach a file and a heading. A block that is not run is a skip that says why.
import { execFile, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, normalize, relative } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { buildClientSchema, getIntrospectionQuery, parse, validate, type IntrospectionQuery } from 'graphql'
import t from 'tap'
import ts from 'typescript'
import { envName } from '../plugins/config.js'
import { TandemOptionsSchema } from '../schema/options.js'
import { serverDatabase, serverUrl } from './helpers/database.js'
import { anchors, BLOCK_PLACE, codeBlocks, relativeLinks, type CodeBlock } from './helpers/markdown.js'
import { startServer, type Server } from './helpers/processes.js'
import { resolveTandemApiEverywhere } from './helpers/source-package.js'
import { root } from './helpers/root.js'

const read = (file: string): string => readFileSync(join(root, file), 'utf8')
const where = (block: CodeBlock): string => `${block.file}:${block.line}`

/** The pages whose code blocks are checked. */
const pages = ['README.md', 'CONTRIBUTING.md', ...(existsSync(join(root, 'docs')) ? readdirSync(join(root, 'docs')) : []).filter((file) => file.endsWith('.md')).sort().map((file) => `docs/${file}`)]
  .filter((page) => existsSync(join(root, page)))
/** The pages whose links are checked: those, and the other documents at the root. */
const linked = [...new Set([...pages, ...readdirSync(root).filter((file) => file.endsWith('.md'))])]
const blocks = pages.flatMap((page) => codeBlocks(page, read(page)))
const byLang = (lang: string): CodeBlock[] => blocks.filter((block) => block.lang === lang)
const callsCurl = (block: CodeBlock): boolean => block.code.split('\n').some((line) => /(^|[\s($|;&])curl\s/.test(line.replace(/(^|\s)#.*$/, '')))
const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts

// The server the curl examples run against, in the pages' order (README first), as a reader who
// tries them one page after another: started now, it comes up while the TypeScript blocks compile.
const curlPages = [...new Set(byLang('sh').filter(callsCurl).map((block) => block.file))]
const started = startDocServer()

async function startDocServer (): Promise<Server | Error> {
  const server = serverUrl()
  const database: Record<string, string> = server === undefined ? {} : { DATABASE_URL: await serverDatabase(t, server) }
  return await startServer(t, database).catch((error: unknown) => error instanceof Error ? error : new Error(String(error)))
}

t.test('every block is in a language this test checks', async (t) => {
  for (const block of blocks) {
    t.ok(['sh', 'ts', 'graphql'].includes(block.lang), `${where(block)}: \`\`\`${block.lang} (sh, ts and graphql are checked)`)
    if (block.lang === 'ts') t.ok(block.flags.every((flag) => flag === 'fragment'), `${where(block)}: ts takes one flag, fragment`)
    if (block.marker !== undefined && block.lang !== 'ts') t.equal(block.marker.wrapper.trim(), '', `${where(block)}: only ts blocks are wrapped`)
  }
})

t.test('relative links reach a file, and a heading of it', async (t) => {
  for (const page of linked) {
    for (const target of relativeLinks(read(page))) {
      const [path = '', anchor] = target.split('#')
      const file = path === '' ? page : normalize(join(dirname(page), path))
      if (!t.ok(existsSync(join(root, file)) && !relative(root, join(root, file)).startsWith('..'), `${page}: ${target} (no ${file})`)) continue
      if (anchor !== undefined) t.ok(anchors(read(file)).has(anchor), `${page}: ${target} (no heading #${anchor} in ${file})`)
    }
  }
})

t.test("the README's configuration lists every option, by its environment variable", async (t) => {
  const readme = read('README.md')
  const start = readme.indexOf('\n## Configuration')
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1))
  for (const option of Object.keys(TandemOptionsSchema.properties)) t.ok(section.includes(`\`${envName(option)}\``), envName(option))
})

t.test("docs/resources.md's table has a row for every option of ResourceDeclaration", async (t) => {
  const source = read('schema/resource.ts')
  const start = source.indexOf('export interface ResourceDeclaration<')
  const declaration = source.slice(start, source.indexOf('\n}\n', start))
  const options = [...declaration.matchAll(/^ {2}(\w+)\??:/gm)].map(([, name = '']) => name)
  t.ok(options.length > 20, `the options read from schema/resource.ts: ${options.join(', ')}`)
  const page = read('docs/resources.md')
  const table = page.slice(page.indexOf('\n## Every option'), page.indexOf('\n## ', page.indexOf('\n## Every option') + 1))
  for (const option of options) t.match(table, `\n| \`${option}\` |`, option)
})

t.test('sh blocks parse, and name npm scripts and files that exist', async (t) => {
  for (const block of byLang('sh')) {
    const syntax = spawnSync('bash', ['-n'], { input: block.code, encoding: 'utf8' })
    t.equal(syntax.status, 0, `${where(block)} parses: ${syntax.stderr}`)
    const code = block.code.replace(/(^|\s)#.*$/gm, '')
    for (const [, run, name = ''] of code.matchAll(/\bnpm\s+(run\s+)?([\w:-]+)/g)) {
      if (run !== undefined || ['start', 'test'].includes(name)) t.ok(Object.hasOwn(scripts, name), `${where(block)}: npm script ${name}`)
      else t.ok(['ci', 'install', 'pack'].includes(name), `${where(block)}: npm ${name}`)
    }
    for (const [, path = ''] of code.matchAll(/(?:^|[\s'"=(])((?:\.{1,2}\/|\.ci\/)?(?:[\w@.-]+\/)+[\w@.-]+\.(?:ts|mjs|js|json|sh|md|graphql))\b/g)) {
      // A built file is checked by its source: `dist/server.js` is what `npm run build` makes of server.ts.
      const file = path.startsWith('dist/') ? path.slice('dist/'.length).replace(/\.js$/, '.ts') : path
      t.ok(existsSync(join(root, file)), `${where(block)}: ${path}`)
    }
  }
})

/** Each `ts` block as a module of its own in `dir`: the block, or its wrapper around it. */
function tsModules (dir: string): Array<{ block: CodeBlock, file: string, offset: number, problem?: string }> {
  return byLang('ts').map((block, index) => {
    const file = join(dir, `block-${index}.ts`)
    const fragment = block.flags.includes('fragment')
    const wrapper = block.marker?.wrapper ?? ''
    if (fragment && !wrapper.includes(BLOCK_PLACE)) return { block, file, offset: 0, problem: `a fragment needs a docs-test comment with ${BLOCK_PLACE} where it goes` }
    const offset = fragment ? wrapper.slice(0, wrapper.indexOf(BLOCK_PLACE)).split('\n').length - 1 : 0
    let code = fragment ? wrapper.replace(BLOCK_PLACE, block.code) : block.code
    // A program stops where a host's code goes on: run alone, it readies its application and closes it.
    if (!fragment && /\bconst app\b/.test(code)) code += '\nawait app.ready()\nawait app.close()\n'
    writeFileSync(file, code)
    return { block, file, offset }
  })
}

// The blocks import Tandem by its name from a directory of their own.
resolveTandemApiEverywhere()
const work = mkdtempSync(join(tmpdir(), 'tandem-docs-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
writeFileSync(join(work, 'package.json'), JSON.stringify({ type: 'module' }))
symlinkSync(join(root, 'node_modules'), join(work, 'node_modules'), 'dir')
const modules = tsModules(work)

interface Typecheck { options: string[], files: Record<string, Array<{ line: number | null, text: string }>> }
// One compile for every block, in a process of its own: it goes on while the blocks run here.
const typecheck: Promise<Typecheck | Error> = promisify(execFile)(process.execPath, [join(root, 'test/helpers/typecheck.mjs'), root, ...modules.map(({ file }) => file)], {
  env: Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_OPTIONS')),
  maxBuffer: 16 * 1024 * 1024
}).then(({ stdout }) => JSON.parse(stdout) as Typecheck, (error: unknown) => error instanceof Error ? error : new Error(String(error)))

t.test('ts blocks run', async (t) => {
  const server = serverUrl()
  for (const { block, file, problem } of modules) {
    if (problem !== undefined) continue
    if (block.marker?.notRun !== undefined) {
      t.pass(`${where(block)} runs`, { skip: `not run: ${block.marker.notRun}` })
      continue
    }
    const javascript = file.replace(/\.ts$/, '.mjs')
    writeFileSync(javascript, ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true } }).outputText)
    // A program reaches its database as a host's would: DATABASE_URL (a new database on the suite's
    // server), else an embedded one in memory.
    const suite = process.env.DATABASE_URL
    if (server !== undefined) process.env.DATABASE_URL = await serverDatabase(t, server)
    try {
      await import(pathToFileURL(javascript).href)
      t.pass(`${where(block)} runs`)
    } catch (error) {
      t.fail(`${where(block)} runs: ${error instanceof Error ? error.message : String(error)}`)
    } finally {
      if (suite === undefined) delete process.env.DATABASE_URL
      else process.env.DATABASE_URL = suite
    }
  }
})

t.test('ts blocks type-check against the sources, in one compile', async (t) => {
  const result = await typecheck
  if (result instanceof Error) return t.fail(`the compile failed: ${result.message}`)
  t.same(result.options, [], 'the compiler options')
  for (const { block, file, offset, problem } of modules) {
    if (problem !== undefined) {
      t.fail(`${where(block)}: ${problem}`)
      continue
    }
    t.same((result.files[file] ?? []).map(({ line, text }) => at(block, offset, line) + text), [], where(block))
  }
})

/** Where in the page a line of a block's module is: `docs/x.md:12: `, or in the wrapper around it. */
function at (block: CodeBlock, offset: number, line: number | null): string {
  if (line === null) return `${where(block)}: `
  const inBlock = line - offset
  return inBlock >= 0 && inBlock < block.code.split('\n').length ? `${block.file}:${block.line + inBlock}: ` : `${where(block)} (its wrapper, line ${line + 1}): `
}

// The shell's curl: the answer goes where the example sends it, and its status, the page's line and
// the status the line expects are noted in a file of their own for the test to read.
const CURL = `curl () {
  local note code=0
  note="$DOCS_CURL_LOG/$(date +%s%N)"
  command curl --max-time 30 "$@" --output "$note.body" --write-out '%{http_code}' > "$note.status" || code=$?
  printf '%s\\n%s\\n%s\\n' "\${DOCS_LINE:-?}" "\${DOCS_EXPECT:-}" "$code" > "$note.meta"
  cat "$note.body"
  return $code
}
`

/** A page's curl blocks as one script: each curl call told the page's line it is on, and the status that line's comment expects. */
function curlScript (page: string, port: number): { script: string, lines: number[] } {
  const lines: number[] = []
  const script: string[] = [CURL]
  for (const block of byLang('sh').filter((block) => block.file === page && callsCurl(block))) {
    const source = block.code.split('\n')
    for (let i = 0; i < source.length; i++) {
      // A command goes on while its lines end in a backslash.
      let end = i
      while ((source[end] ?? '').endsWith('\\') && end + 1 < source.length) end++
      const command = source.slice(i, end + 1).join('\n').replaceAll('localhost:3000', `127.0.0.1:${port}`)
      const expect = /\s#\s*(\d{3})\b[^'"]*$/.exec(source[end] ?? '')?.[1] ?? ''
      const line = block.line + i
      if (/^\s*(#|$)/.test(command)) {
        script.push(command)
      } else {
        if (callsCurl({ ...block, code: command })) lines.push(line)
        script.push(command.replace(/(^|[\s($|;&])curl(?=\s)/g, `$1DOCS_LINE=${line} DOCS_EXPECT=${expect} curl`))
      }
      i = end
    }
  }
  return { script: script.join('\n'), lines }
}

t.test('curl examples run, page after page, against a server started as npm start starts it', async (t) => {
  const server = await started
  if (server instanceof Error) return t.fail(`the server did not start: ${server.message}`)
  for (const page of curlPages) {
    await t.test(page, async (t) => {
      const log = mkdtempSync(join(work, 'curl-'))
      const { script, lines } = curlScript(page, Number(new URL(server.url).port))
      const env = {
        PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
        HOME: process.env.HOME ?? tmpdir(),
        DOCS_CURL_LOG: log
      }
      const run = spawnSync('bash', ['--norc', '--noprofile', '-e', '-u', '-o', 'pipefail', '-c', script], { env, encoding: 'utf8', timeout: 120_000 })
      t.equal(run.status, 0, `the examples ran to their end: ${run.stderr}`)
      const notes = readdirSync(log).filter((file) => file.endsWith('.meta')).sort().map((file) => {
        const [line = '?', expect = '', code = ''] = readFileSync(join(log, file), 'utf8').split('\n')
        const base = join(log, file.replace(/\.meta$/, ''))
        return { line, expect, code, status: readFileSync(`${base}.status`, 'utf8'), body: existsSync(`${base}.body`) ? readFileSync(`${base}.body`, 'utf8') : '' }
      })
      t.same([...new Set(notes.map((note) => note.line))].sort(), lines.map(String).sort(), 'every line that calls curl was run')
      for (const note of notes) {
        const at = `${page}:${note.line}`
        t.equal(note.code, '0', `${at}: curl reached the server`)
        if (note.expect === '') t.ok(Number(note.status) < 400, `${at}: answered ${note.status} ${note.body.slice(0, 300)}`)
        else t.equal(note.status, note.expect, `${at}: answered ${note.status}, as its comment says`)
        const json = /^\s*\{/.test(note.body) ? JSON.parse(note.body) as { errors?: unknown } : {}
        t.notOk(json.errors, `${at}: a GraphQL answer without errors`)
      }
    })
  }
})

t.test('graphql blocks validate against the schema the server serves', async (t) => {
  const server = await started
  if (server instanceof Error) return t.fail(`the server did not start: ${server.message}`)
  const res = await fetch(`${server.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: getIntrospectionQuery() }) })
  const schema = buildClientSchema((await res.json() as { data: IntrospectionQuery }).data)
  for (const block of byLang('graphql')) {
    let errors: string[]
    try {
      errors = validate(schema, parse(block.code)).map((error) => error.message)
    } catch (error) {
      errors = [error instanceof Error ? error.message : String(error)]
    }
    t.same(errors, [], where(block))
  }
})
