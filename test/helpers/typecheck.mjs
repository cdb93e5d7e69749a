// Type-checks TypeScript files against this repository's sources in one compile, in a process of its
// own so that test/docs.test.ts goes on meanwhile: `node typecheck.mjs <root> <file>…` prints
// `{ options: [message], files: { [file]: [{ line, text }] } }` (lines 0-based, null when none).
import { join } from 'node:path'
import ts from 'typescript'

const [root = '.', ...files] = process.argv.slice(2)
const config = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })
if (config === undefined) throw new Error('tsconfig.json could not be read')
const program = ts.createProgram(files, {
  ...config.options,
  noEmit: true,
  rootDir: undefined,
  // What a host imports by the package's name is, here, the sources.
  paths: { 'tandem-api': [join(root, 'index.ts')] },
  typeRoots: [join(root, 'node_modules', '@types')]
})
const text = (diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')
const line = (diagnostic) => diagnostic.file === undefined || diagnostic.start === undefined ? null : diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line
const checked = files.map((file) => {
  const source = program.getSourceFile(file)
  const diagnostics = source === undefined ? [] : [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)]
  return [file, diagnostics.map((diagnostic) => ({ line: line(diagnostic), text: text(diagnostic) }))]
})
process.stdout.write(JSON.stringify({ options: [...program.getOptionsDiagnostics(), ...program.getGlobalDiagnostics()].map(text), files: Object.fromEntries(checked) }))
