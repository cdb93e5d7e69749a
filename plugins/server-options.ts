import type { FastifyServerOptions } from 'fastify'
import type { ResolvedConfig } from './config.js'

/** The Fastify options Tandem's own server runs with; a host application can reuse them. */
export function serverOptions (config: Pick<ResolvedConfig, 'logLevel'>): FastifyServerOptions {
  return {
    logger: {
      level: config.logLevel,
      redact: { paths: ['req.headers.authorization', 'req.headers.cookie', '*.password', '*.accessToken', '*.token'], censor: '[redacted]' }
    },
    routerOptions: { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: 200 },
    bodyLimit: 1024 * 1024,
    requestIdHeader: 'x-request-id',
    return503OnClosing: true,
    forceCloseConnections: 'idle'
  }
}
