// The package's public surface: each part as a Fastify plugin, and `tandem`, which registers them all.
export { default as tandem, type TandemPluginOptions } from './plugins/tandem.js'
export { default as database, type DatabaseOptions } from './plugins/database.js'
export { default as auth, LOGIN_FAILURES_PER_ACCOUNT, ownerOrAdmin, type AccessToken, type AccessTokens, type AccessUser, type AuthRule, type OwnerLoader, type Role } from './plugins/auth.js'
export { default as rateLimiting, ATTEMPT_LIMITS, LOGIN_LIMITS } from './plugins/rate-limit.js'
export { default as events, type TandemEventMap, type TandemEvents } from './plugins/events.js'
export { default as health } from './plugins/health.js'
export { default as housekeeping, PURGE_EVERY_MS } from './plugins/housekeeping.js'
export { default as security } from './plugins/security.js'
export { default as graphql, type GraphqlOptions, type GraphqlOwnOptions, type TandemGraphqlContext } from './plugins/graphql/index.js'
export {
  authRoutes, commentsRoutes, ordersRoutes, postsRoutes, productsRoutes, profilesRoutes, usersRoutes,
  type ResourceRoutesOptions
} from './plugins/resource-routes.js'
export { errorHandler, notFoundHandler } from './plugins/errors.js'
export { serverOptions } from './plugins/server-options.js'
export { resolveConfig, configFromEnv, ConfigError, type ResolvedConfig } from './plugins/config.js'
export type { TandemOptions, TandemConfig } from './schema/options.js'
export { defineResource, type AccessRule, type Resource, type ResourceAction, type ResourceDeclaration, type RowOf } from './schema/resource.js'
export { Type, type Static } from '@sinclair/typebox'
export { TandemError, errorCodes, type ErrorCode } from './schema/errors.js'
export { openOutboxMessage } from './plugins/one-time-tokens.js'
export { connect, type Db } from './db/connect.js'
export type { Database } from './db/types.js'
