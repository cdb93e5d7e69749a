// Every served resource of an application, built once and reached by its declaration (typed from it)
// or by its name: what the transports call, and what a host's own code calls with its caller.
import type { FastifyInstance } from 'fastify'
import type { Resource } from '../schema/resource.js'
import { serveResource, type ServedResource, type ServedResourceOf } from './served-resource.js'

/**
 * `app.tandemResources(labels)`: the served resource of a declaration `tandem` serves, its rows typed
 * from the representation; `app.tandemResources('label')` by name. Throws for one that is not served.
 */
export interface TandemResources {
  <T extends Resource>(declared: T): ServedResourceOf<T>
  (name: string): ServedResource
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The served resources (`tandem` decorates it): `app.tandemResources(labels).list(request.user, { limit: 5 })`. */
    tandemResources: TandemResources
  }
}

/** Decorates `app` with the served resources of `resources` (every one `tandem` serves), each built once. */
export function decorateServedResources (app: FastifyInstance, resources: readonly Resource[]): void {
  const byName = new Map(resources.map((resource) => [resource.name, serveResource(app, resource, resources)]))
  const of = (declared: Resource | string): ServedResource => {
    const name = typeof declared === 'string' ? declared : declared.name
    const served = byName.get(name)
    // A declaration of the same name that `tandem` was not given is another resource.
    if (served === undefined || (typeof declared !== 'string' && served.resource !== declared)) throw new Error(`tandemResources: ${JSON.stringify(name)} is not a resource this application serves`)
    return served
  }
  app.decorate('tandemResources', of as TandemResources)
}

/**
 * The served resource of `resource` for a transport registered on `app`: the application's own
 * (`tandem`'s), or, for a resource's routes mounted without it, one built for them from `resources`.
 */
export function servedResourceOf (app: FastifyInstance, resource: Resource, resources: readonly Resource[]): ServedResource {
  if (app.hasDecorator('tandemResources')) {
    try {
      const served = app.tandemResources(resource.name)
      if (served.resource === resource) return served
    } catch {
      // Served by these routes only.
    }
  }
  return serveResource(app, resource, resources)
}
