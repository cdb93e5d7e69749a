// Preloaded into each test process by `npm test` (package.json's `node-arg` in the build): a test
// whose runner was killed outright (tap's SIGKILL is then never sent) ends when its IPC channel to the
// runner closes, if its event loop still runs. The channel must not keep the test running.
process.once('disconnect', () => process.exit(1))
process.channel?.unref()
