// Preloaded into tap's runner by scripts/test.mjs. tap starts every test file with the runner's own
// process.execPath, its process tracker (@tapjs/processinfo) among the flags: here that path is
// scripts/test-node.sh, which runs the test in node without the tracker. The tracker serves coverage,
// which this project has turned off, and costs every test process about as much CPU as its module
// loading: each module it loads goes through a loader hook, on Node 20 in a thread of its own
// (CONTRIBUTING.md gives the suite's times with and without it).
import { fileURLToPath } from 'node:url'

process.env.TANDEM_TEST_NODE = process.execPath
process.execPath = fileURLToPath(new URL('test-node.sh', import.meta.url))
