// Host types under `strict` (issue 40, 11): test/types/host/host.ts is a host's code, compiled here by
// tsc against the package's sources. It names its tables in `HostTables` (one from its declaration's
// representation with `TableOf`, one by hand) and queries them through `app.db` and its hooks' `trx`
// with no cast; `caller` is a user in the hooks of writes whose rule needs one and in actions; hook
// `values` carry the representation's types. Each `// @ts-expect-error` line there is a mistake the
// types must catch: the compile fails when one is not an error any more, as when a typed line is one.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { root } from '../helpers/root.js'

const project = join(root, 'test/types/host/tsconfig.json')

// The whole package is compiled with the host: more than tap's default on a busy machine.
t.setTimeout(240_000)

t.test('a strict host\'s tables, callers and hook values are typed with no cast', async (t) => {
  const compiled = await promisify(execFile)(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-p', project], { cwd: root })
    .then(() => '', (error: { stdout?: string, message: string }) => error.stdout ?? error.message)
  t.equal(compiled, '', 'tsc finds no error, and each @ts-expect-error is one')
})
