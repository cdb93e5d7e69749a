// Preloaded into each test process by scripts/test-launch.mjs: a test whose launcher was killed
// outright (SIGKILL cannot be relayed) ends when its channel to the launcher closes, if its event loop
// still runs (the launcher kills a stuck one itself when tap times it out). The channel must not keep
// the test running.
process.once('disconnect', () => process.exit(1))
process.channel?.unref()
