import type { Server } from 'node:http'
import { createRequire } from 'node:module'
import type { FastifyHttpOptions, FastifyReply, FastifyRequest } from 'fastify'
import { ConfigError, refusedTrustProxy, settingName, type ResolvedConfig } from './config.js'
import { toErrorResponse } from './errors.js'
import { missingPackages, requirePackages } from './optional-packages.js'
import { redactUrl } from './redaction.js'
import { requestLogger } from './request-logger.js'
import { requestIdOf } from './security.js'

/** Fastify's own request serializer, with `redactUrl` (the spans' URLs are redacted alike: plugins/tracing-redaction.ts). */
function serializeRequest (request: FastifyRequest) {
  return {
    method: request.method,
    url: redactUrl(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort
  }
}

/**
 * `TRUST_PROXY` as Fastify's `trustProxy` takes it: a hop count, or the addresses and CIDRs of the
 * proxies. `true` throws (see `refusedTrustProxy`), here too, as a host may pass a setting of its own;
 * the error calls it `name`.
 */
export function trustProxyOption (setting: string | undefined, name = 'trustProxy'): false | string | ((address: string, hop: number) => boolean) {
  if (setting === undefined || setting === 'false') return false
  const refused = refusedTrustProxy(setting, name)
  if (refused !== undefined) throw new ConfigError(refused)
  if (/^[0-9]+$/.test(setting)) {
    // What Fastify makes of a number: the closest `hops` addresses are proxies.
    const hops = Number(setting)
    return (_address, hop) => hop < hops
  }
  return setting.split(',').map((address) => address.trim()).join(',')
}

export type LogFormat = 'json' | 'pretty'

/**
 * How the log is written: `logFormat` when set, else pino-pretty's lines for a person at a terminal
 * outside production, and pino's JSON lines (what log collectors read) everywhere else. pino-pretty
 * is an optional peer: `pretty` asked for without it stops the start (a `ConfigError` naming it);
 * unasked, the log is JSON.
 */
export function logFormat (config: { logFormat?: LogFormat | undefined, nodeEnv?: string | undefined }, stdoutIsTerminal: boolean): LogFormat {
  if (config.logFormat === 'pretty') {
    const setting = settingName(config, 'logFormat')
    requirePackages('prettyLog', `${setting} pretty`, `set ${setting} to json`)
  }
  if (config.logFormat !== undefined) return config.logFormat
  return stdoutIsTerminal && config.nodeEnv !== 'production' && missingPackages('prettyLog').length === 0 ? 'pretty' : 'json'
}

/**
 * pino's transport for a format: none for JSON, which pino writes itself; pino-pretty for `pretty`,
 * in a worker thread of pino's, and resolved from here so that a host finds Tandem's copy. The
 * module is named, not imported, so that a JSON log never loads it.
 */
export function logTransport (format: LogFormat): { target: string, options: Record<string, unknown> } | undefined {
  if (format === 'json') return undefined
  return {
    target: createRequire(import.meta.url).resolve('pino-pretty'),
    options: { translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }
  }
}

/** How often Node looks for requests past `requestTimeout` (its own default would let a slow request run on that much longer). */
const TIMEOUT_CHECK_MS = 1000

/**
 * The Fastify options Tandem's own server runs with; a host application can reuse them. Say whether
 * stdout is a terminal (`process.stdout.isTTY`) to have a readable log there in development (with
 * pino-pretty installed). Throws a `ConfigError` for a setting it cannot apply (see `logFormat`).
 * @example Fastify(serverOptions(config, { stdoutIsTerminal: process.stdout.isTTY === true }))
 */
export function serverOptions (
  config: Pick<ResolvedConfig, 'logLevel'> & Partial<Pick<ResolvedConfig, 'trustProxy' | 'requestTimeout' | 'logFormat' | 'nodeEnv'>>,
  { stdoutIsTerminal = false }: { stdoutIsTerminal?: boolean } = {}
): FastifyHttpOptions<Server> {
  const requestTimeout = config.requestTimeout ?? 30_000
  const transport = logTransport(logFormat(config, stdoutIsTerminal))
  return {
    trustProxy: trustProxyOption(config.trustProxy, settingName(config, 'trustProxy')),
    // Headers and body must arrive within this: a client trickling them holds a socket and a parser.
    requestTimeout,
    http: { connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, requestTimeout === 0 ? TIMEOUT_CHECK_MS : requestTimeout) },
    logger: {
      level: config.logLevel,
      ...(transport === undefined ? {} : { transport }),
      serializers: { req: serializeRequest },
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.accessToken', '*.token', '*.*.password', '*.*.accessToken', '*.*.token'],
        censor: '[redacted]'
      }
    },
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 200 },
    bodyLimit: 1024 * 1024,
    // A malformed URL or an over-long path parameter is refused by the router before any error
    // handler runs; without this Fastify answers in a shape of its own.
    frameworkErrors: (error, request, reply) => {
      const { statusCode, body } = toErrorResponse(error)
      const answer = reply as FastifyReply
      answer.code(statusCode).header('x-request-id', request.id).type('application/json').send(body)
    },
    // Opening the embedded database and migrating it can take a while on a busy, small machine.
    pluginTimeout: 60_000,
    // `x-request-id` is read by `requestIdOf`, which accepts it only when safe to log and echo
    // (Fastify's `requestIdHeader` would take any value as it comes).
    requestIdHeader: false,
    genReqId: requestIdOf,
    childLoggerFactory: requestLogger,
    return503OnClosing: true,
    forceCloseConnections: 'idle'
  }
}
