import type { TracerProvider } from '@opentelemetry/api'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { TandemOptions } from '../schema/options.js'
import auth from '../plugins/auth.js'
import { ConfigError, settingName, useConfig } from '../plugins/config.js'
import database, { connectOptions, type DatabaseOptions } from '../plugins/database.js'
import { errorHandler, notFoundHandler } from '../plugins/errors.js'
import events from '../plugins/events.js'
import graphql, { type GraphqlOwnOptions } from '../graphql/index.js'
import housekeeping from '../plugins/housekeeping.js'
import metrics, { metricsEnabled } from '../plugins/metrics.js'
import requestTimeout from '../plugins/request-timeout.js'
import health from '../plugins/health.js'
import rateLimiting from '../plugins/rate-limit.js'
import security from '../plugins/security.js'
import openapi from '../plugins/openapi.js'
import type { Resource } from '../schema/resource.js'
import overload from '../plugins/overload.js'
import { servedResources } from '../rules/built-in-resources.js'
import { decorateServedResources } from '../rules/served-resources.js'
import { loadResourcesModule } from './resources-module.js'
import { restApi } from './rest.js'
import tracing from '../plugins/tracing.js'

export interface TandemPluginOptions extends TandemOptions {
  /** Use an already connected Kysely instance (tests, or a host that owns the pool). @example await connect({ databaseUrl }) */
  db?: DatabaseOptions['db']
  /** Serve `/openapi.json` and `/docs`. Default: true; turn off when the host has its own @fastify/swagger. @example false */
  openapi?: boolean
  /**
   * Serve the query style at `/graphql` (and GraphiQL at `/graphiql` outside production, when its
   * optional packages are installed), with these options of its own if an object. Default: true.
   * @example { graphiql: false }
   */
  graphql?: boolean | GraphqlOwnOptions
  /** Answer unknown routes and uncaught errors of the whole application in Tandem's error shape. Default: false, so a host keeps its own. @example true */
  rootHandlers?: boolean
  /** The host's own resources (`defineResource`), served under `/api/v1` beside the built-in ones. @example [labels] */
  resources?: readonly Resource[]
  /** The host's own migrations, run at start in a migration table of the host's own (`host_migrations`). */
  migrations?: DatabaseOptions['migrations']
  /**
   * OpenTelemetry traces of requests, GraphQL operations and SQL statements: `true` through the global
   * tracer provider (the one the application's SDK registered), or through this provider. Default: on
   * when `otelExporterOtlpEndpoint` is set; off, nothing of it is registered.
   * @example true
   */
  tracing?: boolean | TracerProvider
  /**
   * Add Tandem's HTTP headers to every answer of the application, the host's routes included:
   * helmet's headers, a strict `Content-Security-Policy` on all but HTML, `x-request-id`, and CORS
   * when `corsOrigins` is set (the `security` plugin). Default: true; false adds none of them, for a
   * host that sets its own (with @fastify/helmet and @fastify/cors, say). @example false
   */
  security?: boolean
}

/**
 * The host's resources: given as options, or in the module `resourcesModule` names (never both).
 * `setting` is how the operator called that option (`RESOURCES_MODULE` from the environment).
 */
async function hostResources (options: Pick<TandemPluginOptions, 'resources' | 'migrations'>, resourcesModule: string | undefined, setting: string): Promise<Pick<TandemPluginOptions, 'resources' | 'migrations'>> {
  if (resourcesModule === undefined) return { resources: options.resources, migrations: options.migrations }
  if (options.resources !== undefined || options.migrations !== undefined) {
    throw new ConfigError(`invalid configuration: give resources and migrations, or ${setting}, not both`)
  }
  return loadResourcesModule(resourcesModule, setting)
}

/**
 * Everything at once: configuration, database, `/health` and `/ready`, access tokens, rate limiting,
 * the REST API under `/api` and GraphQL at `/graphql`, and OpenTelemetry traces when asked for. What
 * it adds to the application's root (its headers on every answer, overload answers, the 408 of a slow
 * body) is listed in the README, with the option that turns each off.
 * @example
 * await app.register(tandem, { databaseUrl: process.env.DATABASE_URL })
 */
async function tandem (app: FastifyInstance, options: TandemPluginOptions): Promise<void> {
  const { db, rootHandlers, openapi: withOpenApi, graphql: withGraphql, tracing: traced, security: withSecurity, resources: given, migrations: givenMigrations, ...rest } = options
  const config = useConfig(app, rest)
  const { resources, migrations } = await hostResources({ resources: given, migrations: givenMigrations }, config.resourcesModule, settingName(config, 'resourcesModule'))
  // Before anything else starts: a resource that takes another's name or path stops the start here.
  servedResources(resources)
  // First, so that every hook and route after it is traced.
  if (traced === true || (traced === undefined && config.otelExporterOtlpEndpoint !== undefined)) await app.register(tracing)
  else if (typeof traced === 'object') await app.register(tracing, { tracerProvider: traced })
  // Then metrics: its hooks time every request, and the plugins below report to it when they find it.
  if (metricsEnabled(config)) await app.register(metrics)
  if (withSecurity === false) {
    // CORS is part of the headers left to the host: an origin list that nothing applies is a mistake.
    if (config.corsOrigins !== undefined) throw new ConfigError(`invalid configuration: ${settingName(config, 'corsOrigins')} needs security; with security: false, register @fastify/cors yourself`)
  } else {
    await app.register(security)
  }
  await app.register(requestTimeout)
  await app.register(database, { ...connectOptions(config), db, migrations })
  await app.register(overload)
  await app.register(health)
  await app.register(housekeeping)
  await app.register(auth)
  await app.register(rateLimiting)
  if (withOpenApi !== false) await app.register(openapi)
  await app.register(events)
  // Each served resource built once, for both transports and the host's own code.
  decorateServedResources(app, servedResources(resources))
  if (withGraphql !== false) await app.register(graphql, { resources, ...withGraphql === true || withGraphql === undefined ? {} : withGraphql })
  if (rootHandlers === true) {
    app.setErrorHandler(errorHandler)
    app.setNotFoundHandler(notFoundHandler)
  }
  await restApi(app, resources)
}

export default fp(tandem, { name: 'tandem', fastify: '5.x' })
