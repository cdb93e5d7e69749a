// Compiles a host application as `tsc -p <dir>` does, and checks the declarations of the packages
// named after it (`node host-compile.mjs <dir> tandem-api fastify`) as `skipLibCheck: false` would,
// whatever the host's tsconfig.json says: those only, not every other package's and Node's, which are
// not this project's to check. Prints tsc's diagnostics and exits 1 when there is any.
import { join } from 'node:path'
import ts from 'typescript'

const [dir = '.', ...packages] = process.argv.slice(2)
const config = ts.getParsedCommandLineOfConfigFile(join(dir, 'tsconfig.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} })
if (config === undefined) throw new Error(`${dir}/tsconfig.json could not be read`)
const program = ts.createProgram({ rootNames: config.fileNames, options: { ...config.options, skipLibCheck: false }, configFileParsingDiagnostics: config.errors })
const checked = (file) => !file.isDeclarationFile || packages.some((name) => file.fileName.includes(`/node_modules/${name}/`))
const diagnostics = [
  ...program.getConfigFileParsingDiagnostics(),
  ...program.getOptionsDiagnostics(),
  ...program.getGlobalDiagnostics(),
  ...program.getSourceFiles().filter(checked).flatMap((file) => [...program.getSyntacticDiagnostics(file), ...program.getSemanticDiagnostics(file)]),
  // File by file: emitting them all at once has the checker check every file first, libraries too.
  ...program.getSourceFiles().filter((file) => !file.isDeclarationFile).flatMap((file) => program.emit(file).diagnostics)
]
if (diagnostics.length > 0) {
  process.stdout.write(ts.formatDiagnostics(diagnostics, { getCanonicalFileName: (name) => name, getCurrentDirectory: () => dir, getNewLine: () => '\n' }))
  process.exitCode = 1
}
