// `npm test` runs this first (pretest). tap builds its test class with the plugins package.json's
// `tap.plugin` asks for, but a run that finds them changed (a fresh `npm ci` has tap's defaults)
// rebuilds for the runs after it only: that first run would still load TypeScript through ts-node as
// well as tsx, a second or so per test file. So the class is built here when its plugins are not
// the ones asked. The built list is read from the text tap writes (`export const signature`); should
// that ever change shape, tap is built every time, which costs seconds and breaks nothing.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const root = new URL('..', import.meta.url)
const asked = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')).tap?.plugin ?? []
let built
try {
  const file = fileURLToPath(import.meta.resolve('@tapjs/test/test-built'))
  built = /^export const signature = `([^`]*)`/m.exec(readFileSync(file, 'utf8'))?.[1]?.trim().split('\n')
} catch {}
const differs = built === undefined || asked.some((plugin) => plugin.startsWith('!') ? built.includes(plugin.slice(1)) : !built.includes(plugin))
if (differs) execFileSync('npx', ['tap', 'build'], { stdio: 'inherit', cwd: root })
