import { configFromEnv, ConfigError } from './plugins/config.js'
import { watchTerminal } from './plugins/terminal.js'

// First, while stdin, stdout and stderr are as the process found them: whichever is a terminal
// that goes away later is pointed at /dev/null, or Node 20 aborts as it exits and the log stops the server.
const onLostTerminal = watchTerminal()

/** Every demo user's password, so that a first-time user can log in and try each endpoint. */
const DEMO_PASSWORD = 'tandem-demo'

/** A configuration error stops the start with its one line; anything else is thrown on. */
function refuse (error: unknown): never {
  if (!(error instanceof ConfigError)) throw error
  process.stderr.write(`tandem: ${error.message}\n`)
  process.exit(1)
}

// The only place that reads the environment: everything else receives options.
let config
try {
  config = configFromEnv({ ...process.env, DATA_DIR: process.env.DATA_DIR ?? './.data' })
} catch (error) {
  refuse(error)
}

// Traces: the SDK is started before the database's modules load, since it instruments the `pg`
// driver as Node loads it. Without an endpoint none of it is loaded.
// Its packages are optional: a server started without them says which to install, in one line.
if (config.otelExporterOtlpEndpoint !== undefined) {
  try {
    (await import('./plugins/optional-packages.js')).requirePackages('traceExport', 'OTEL_EXPORTER_OTLP_ENDPOINT', 'unset OTEL_EXPORTER_OTLP_ENDPOINT')
  } catch (error) {
    refuse(error)
  }
}
const tracerProvider = config.otelExporterOtlpEndpoint === undefined ? undefined : (await import('./plugins/tracing-sdk.js')).startTracing()

// The application is loaded only once the configuration is known to be good, so that a bad one is
// reported at once. The database starts opening meanwhile.
const connection = import('./db/connect.js')
const opening = Promise.all([connection, import('./plugins/database.js')])
  .then(([{ connect }, { connectOptions }]) => connect(connectOptions(config)))
opening.catch(() => {}) // awaited below; a failure is reported there
const [{ default: closeWithGrace }, { default: Fastify }, { default: drain }, { serverOptions }, { default: tandem }, { settle }, { loadDemoData }, { hashPassword }] = await Promise.all([
  import('close-with-grace'),
  import('fastify'),
  import('./plugins/drain.js'),
  import('./plugins/server-options.js'),
  import('./app/tandem.js'),
  connection,
  import('./db/demo.js'),
  import('./plugins/passwords.js')
])

let options
try {
  // LOG_FORMAT=pretty without pino-pretty installed is refused here.
  options = serverOptions(config, { stdoutIsTerminal: process.stdout.isTTY === true })
} catch (error) {
  refuse(error)
}
const app = Fastify(options)
try {
  await app.register(drain)
  const db = await opening
  // Added first, so it runs last: after every plugin's own onClose, once the requests whose
  // clients left have finished their statements.
  app.addHook('onClose', async () => {
    await settle(db)
    await db.destroy()
  })
  await app.register(tandem, { ...config, db, rootHandlers: true })
  await app.ready()
  if (await loadDemoData(app.db, await hashPassword(DEMO_PASSWORD))) {
    app.log.info(`empty database: loaded the demo data set (users such as ada@example.com, password "${DEMO_PASSWORD}")`)
  }
  await app.listen({ host: config.host, port: config.port })
} catch (error) {
  // One line, whatever the message (GraphQL's schema errors, say, span several).
  const message = (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, ' ')
  process.stderr.write(`tandem: cannot start: ${message}\n`)
  await app.close().catch(() => {})
  process.exit(1)
}

// Before close-with-grace's listeners, whose 'closing' line would go to a terminal that hung up: on
// SIGHUP, which the kernel sends as a terminal goes, and on the others, if it went unannounced.
for (const signal of ['SIGHUP', 'SIGINT', 'SIGQUIT', 'SIGTERM', 'SIGUSR2'] as const) process.on(signal, onLostTerminal)
// Not for the signals of a fault (a bad memory access, an illegal instruction, abort()): a listener
// only queues one for the event loop and returns to the faulting instruction, which faults again —
// a core spun on it for good and no later signal was heard. Its SIGSEGV handler also replaced V8's,
// which turns a WebAssembly out-of-bounds access (PGlite's) into an exception: that spun as well.
// Their default ends the process.
closeWithGrace({ delay: 10_000, skip: ['SIGSEGV', 'SIGBUS', 'SIGFPE', 'SIGILL', 'SIGTRAP', 'SIGABRT'] }, async ({ signal, err }) => {
  if (err !== undefined) app.log.error({ err }, 'closing after an uncaught error')
  else app.log.info({ signal }, 'closing')
  await app.close()
  // The spans still in the exporter's batch, the last requests' among them.
  await tracerProvider?.shutdown()
})
