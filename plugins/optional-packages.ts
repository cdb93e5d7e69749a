import { ConfigError } from './config.js'

/**
 * Tandem's optional peer dependencies, by the feature that needs them, with the versions it takes
 * (package.json's `peerDependencies`, `optional` in its `peerDependenciesMeta`: a test holds them
 * equal). A host installs those of the features it uses; nothing imports them until its feature starts.
 */
export const OPTIONAL_PACKAGES = {
  /** The embedded database (PGlite), used when no `databaseUrl` is given. */
  embeddedDatabase: { '@electric-sql/pglite': '^0.4.6', 'kysely-pglite-dialect': '^1.3.1' },
  /** GraphiQL at `/graphiql`: its page loads these packages' browser builds, served by the API. */
  graphiql: { graphiql: '^3.9.0', react: '^18.3.1', 'react-dom': '^18.3.1' },
  /** `logFormat: 'pretty'`: log lines for people. */
  prettyLog: { 'pino-pretty': '^13.2.0' },
  /** The `tracing` plugin (`tracing: true`, or `otelExporterOtlpEndpoint`): the request spans. */
  tracing: { '@fastify/otel': '^0.21.2' },
  /**
   * The server's own traces (`OTEL_EXPORTER_OTLP_ENDPOINT` for `dist/server.js`): the SDK that sends them
   * and instruments `pg`, with the plugin that makes the request spans. A host that registers `tracing`
   * brings its own SDK instead.
   */
  traceExport: {
    '@fastify/otel': '^0.21.2',
    '@opentelemetry/exporter-trace-otlp-http': '^0.223.1',
    '@opentelemetry/instrumentation-pg': '^0.76.0',
    '@opentelemetry/resources': '^2.12.1',
    '@opentelemetry/sdk-trace-node': '^2.12.0'
  }
} as const satisfies Record<string, Record<string, string>>

export type OptionalFeature = keyof typeof OPTIONAL_PACKAGES

/** Whether `name` resolves from here, as an import of Tandem's own would (from the host's node_modules). */
function installed (name: string): boolean {
  try {
    import.meta.resolve(name)
    return true
  } catch {
    return false
  }
}

/** The packages of `feature` that are not installed. */
export const missingPackages = (feature: OptionalFeature): string[] => Object.keys(OPTIONAL_PACKAGES[feature]).filter((name) => !installed(name))

/** `names` in a sentence: `a`, `a and b`, `a, b and c`. */
export const listed = (names: readonly string[]): string => names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1) ?? ''}`

/**
 * The command that installs `names` of `feature`'s packages at the versions Tandem takes: a bare
 * `npm install` takes the latest, which the peer range may refuse.
 */
export function installCommand (feature: OptionalFeature, names: readonly string[]): string {
  const versions: Readonly<Record<string, string>> = OPTIONAL_PACKAGES[feature]
  return `npm install ${names.map((name) => `${name}@${versions[name] ?? 'latest'}`).join(' ')}`
}

/**
 * Stops the start (a `ConfigError`, one line) when `feature` lacks one of its packages, before any
 * of them is imported: never a stack trace from a failed import. The line names the packages, the
 * command that installs them, and how to do without; `what` names the feature as the operator
 * asked for it.
 * @example requirePackages('prettyLog', 'LOG_FORMAT pretty', 'set LOG_FORMAT to json')
 */
export function requirePackages (feature: OptionalFeature, what: string, otherwise: string): void {
  const missing = missingPackages(feature)
  if (missing.length === 0) return
  throw new ConfigError(`${what} needs ${listed(missing)}, ${missing.length === 1 ? 'which is' : 'which are'} not installed: ${installCommand(feature, missing)}, or ${otherwise}`)
}
