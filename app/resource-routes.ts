import type { FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import * as routes from '../routes/index.js'
import type { Resource } from '../schema/resource.js'
import { declaredRoutes } from '../routes/resource.js'
import { builtInResources, servedResources } from '../rules/built-in-resources.js'
import { comments } from '../rules/comments.js'
import { orders } from '../rules/orders.js'
import { posts } from '../rules/posts.js'
import { products } from '../rules/products.js'
import { profiles } from '../rules/profiles.js'
import { users } from '../rules/users.js'
import { restScope } from './rest.js'

/** Options of each resource's routes plugin; the path prefix is Fastify's own `prefix`. */
export interface ResourceRoutesOptions {
  /**
   * Count these routes against Tandem's per-caller limit (`rateLimitMax` per `rateLimitWindow`).
   * Applies only when Tandem's rate-limit plugin is registered. Default: true.
   * @example false
   */
  rateLimit?: boolean
  /**
   * Declared resources whose relations name an `inverse` on this resource (users, posts and
   * comments): their relations are served here too, as `include=` and nested lists. Default: none.
   * @example [labels]
   */
  resources?: readonly Resource[]
}

/** A built-in declared resource's routes, with the relations the declared `resources` add to it through `inverse`. */
function withInverses (resource: Resource): FastifyPluginAsync<{ resources?: readonly Resource[] }> {
  return async (scope, options) => { await scope.register(declaredRoutes(resource, servedResources(options.resources))) }
}

/**
 * One resource's routes as a plugin a host mounts where it likes. Wrapped in `fp` for its name,
 * Fastify version and dependency checks, but with `encapsulate: true`: the routes get a scope of
 * their own (the host's `prefix` applies, and Tandem's validator, error handler and hooks stay
 * inside it, so the host's routes keep theirs). Unknown paths under the prefix are left to the
 * host's not-found handler, since two of these plugins may share one prefix.
 */
function mountable (name: string, resource: FastifyPluginAsync<{ resources?: readonly Resource[] }>): FastifyPluginAsync<ResourceRoutesOptions> {
  const plugin: FastifyPluginAsync<ResourceRoutesOptions> = async (scope, options) => {
    await restScope(scope, { rateLimit: options.rateLimit })
    await scope.register(resource, { resources: options.resources })
  }
  return fp(plugin, { name, fastify: '5.x', encapsulate: true, dependencies: ['tandem-database', 'tandem-auth'] })
}

/**
 * `POST /users` (sign-up), `GET /users`, `GET/PUT/PATCH/DELETE /users/:id`: the routes of the users'
 * declaration (rules/users.ts), with the relations declared resources add to users.
 * @example
 * await app.register(usersRoutes, { prefix: '/api/v1' })
 */
export const usersRoutes = mountable('tandem-users-routes', withInverses(users))

/**
 * `POST /auth/login`, `POST /auth/logout`, e-mail verification and password resets. With Tandem's
 * rate-limit plugin registered, sign-in attempts are also limited per IP and per account.
 * @example
 * await app.register(authRoutes, { prefix: '/api/v1' })
 */
export const authRoutes = mountable('tandem-auth-routes', routes.authRoutes)

/**
 * `GET/POST /posts`, `GET/PUT/PATCH/DELETE /posts/:id`, `GET /users/:id/posts`: the routes of the
 * posts' declaration (rules/posts.ts); a new post is published to GraphQL subscribers when Tandem's
 * events plugin is registered.
 * @example
 * await app.register(postsRoutes, { prefix: '/api/v1' })
 */
export const postsRoutes = mountable('tandem-posts-routes', withInverses(posts))

/**
 * `GET/POST /posts/:id/comments`, `GET /comments`, `GET/DELETE /comments/:id`: the routes of the
 * comments' declaration (rules/comments.ts); a new comment is published to GraphQL subscribers when
 * Tandem's events plugin is registered.
 * @example
 * await app.register(commentsRoutes, { prefix: '/api/v1' })
 */
export const commentsRoutes = mountable('tandem-comments-routes', withInverses(comments))

/**
 * `GET/PUT/PATCH /users/:id/profile`: the routes of the profiles' declaration (rules/profiles.ts), a
 * singular resource of users.
 * @example
 * await app.register(profilesRoutes, { prefix: '/api/v1' })
 */
export const profilesRoutes = mountable('tandem-profiles-routes', declaredRoutes(profiles, builtInResources))

/**
 * `GET /products` and `GET /products/:id` for anyone; writes for administrators: the routes of the
 * products' declaration (rules/products.ts), as a declared resource of a host's would have them.
 * @example
 * await app.register(productsRoutes, { prefix: '/api/v1', rateLimit: false })
 */
export const productsRoutes = mountable('tandem-products-routes', declaredRoutes(products, builtInResources))

/**
 * `POST /orders` (stock taken in the same transaction), `GET /orders`, `GET /orders/:id`,
 * `GET /users/:id/orders` and the order's transitions (`/cancel`, `/pay`, `/ship`): the routes of the
 * orders' declaration (rules/orders.ts), as a declared resource of a host's would have them.
 * @example
 * await app.register(ordersRoutes, { prefix: '/api/v1' })
 */
export const ordersRoutes = mountable('tandem-orders-routes', withInverses(orders))

/**
 * A host's declared resource's routes as a plugin, mounted where the host likes and without `tandem`
 * (Tandem's database and auth plugins first, as for the built-in ones). `related` are the other
 * declared resources its relations reach; the built-in declared ones are always known.
 * @example
 * await app.register(declaredResourceRoutes(labels), { prefix: '/api/v1' })
 */
export function declaredResourceRoutes (resource: Resource, related: readonly Resource[] = []): FastifyPluginAsync<ResourceRoutesOptions> {
  return mountable(`tandem-${resource.plural}-routes`, declaredRoutes(resource, servedResources([resource, ...related])))
}
