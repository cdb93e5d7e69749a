// What test/docs.test.ts reads of a Markdown page: its fenced code blocks (with the `docs-test`
// comment that may stand above one), its headings as GitHub anchors them, and its relative links.

/** What the HTML comment right above a block says: `<!-- docs-test`, an optional `not run: <why>`, then code around the block. */
export interface BlockMarker {
  /** Why the block is not run, when it is not. */
  notRun?: string
  /** Code around the block, `/* block *\/` where the block goes; empty when the comment gives none. */
  wrapper: string
}

export interface CodeBlock {
  /** The page, relative to the repository. */
  file: string
  /** The line of the page where the block's code starts (1-based). */
  line: number
  /** The first word of the fence's info string: `ts`, `sh`, `graphql`. */
  lang: string
  /** The other words: `fragment`. */
  flags: string[]
  code: string
  marker?: BlockMarker
}

const MARKER = '<!-- docs-test'
export const BLOCK_PLACE = '/* block */'

/** The fenced code blocks of a page, their indentation (inside a list) removed. */
export function codeBlocks (file: string, text: string): CodeBlock[] {
  const lines = text.split('\n')
  const blocks: CodeBlock[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*(.*)$/.exec(lines[i] ?? '')
    if (open === null) continue
    const [, indent = '', fence = '```', info = ''] = open
    const close = new RegExp(`^\\s*${fence[0] === '`' ? '`' : '~'}{${fence.length},}\\s*$`)
    const body: string[] = []
    let end = i + 1
    for (; end < lines.length && !close.test(lines[end] ?? ''); end++) body.push(dedent(lines[end] ?? '', indent))
    if (end === lines.length) throw new Error(`${file}:${i + 1}: a code block that is never closed`)
    const [lang = '', ...flags] = info.trim().split(/\s+/)
    const marker = markerAbove(lines, i, indent)
    blocks.push({ file, line: i + 2, lang, flags, code: body.join('\n'), ...marker === undefined ? {} : { marker } })
    i = end
  }
  return blocks
}

function dedent (line: string, indent: string): string {
  return line.startsWith(indent) ? line.slice(indent.length) : line.trimStart()
}

/** The `docs-test` comment that ends on the line right above the fence at `fence`, if any. */
function markerAbove (lines: readonly string[], fence: number, indent: string): BlockMarker | undefined {
  if (lines[fence - 1]?.trim() !== '-->') return undefined
  let start = fence - 2
  while (start >= 0 && !(lines[start] ?? '').trimStart().startsWith('<!--')) start--
  if (start < 0 || (lines[start] ?? '').trim() !== MARKER) return undefined
  const inside = lines.slice(start + 1, fence - 1).map((line) => dedent(line, indent))
  const notRun = /^not run:\s*(.+)$/.exec(inside[0] ?? '')?.[1]
  const wrapper = (notRun === undefined ? inside : inside.slice(1)).join('\n')
  return { ...notRun === undefined ? {} : { notRun }, wrapper }
}

/** The page without its code blocks and HTML comments. */
function withoutBlocks (text: string): string {
  return text
    .replace(/^(\s*)(`{3,}|~{3,})[^\n]*\n[\s\S]*?\n\s*\2[^\n]*$/gm, '')
    .replace(/<!--[\s\S]*?-->/g, '')
}

/** The page without its code blocks, HTML comments and code spans: where its links are. */
export function prose (text: string): string {
  return withoutBlocks(text).replace(/`[^`\n]*`/g, '')
}

/** The anchors of a page's headings, as GitHub makes them (`## Traces (OpenTelemetry)` → `traces-opentelemetry`). */
export function anchors (text: string): Set<string> {
  const seen = new Map<string, number>()
  const result = new Set<string>()
  for (const [, heading = ''] of withoutBlocks(text).replace(/`([^`\n]*)`/g, '$1').matchAll(/^#{1,6}\s+(.+?)\s*#*\s*$/gm)) {
    const slug = heading.toLowerCase().replace(/<[^>]+>/g, '').replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-')
    const count = seen.get(slug) ?? 0
    seen.set(slug, count + 1)
    result.add(count === 0 ? slug : `${slug}-${count}`)
  }
  return result
}

/** The targets of the page's Markdown links that stay in the repository (no scheme): `docs/rest.md#lists`, `#limits`. */
export function relativeLinks (text: string): string[] {
  return [...prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map(([, target = '']) => target)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
}
