// The server's way to take a host's resources without a host application: RESOURCES_MODULE names
// an ES module that exports them (and the migrations of their tables).
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Migration } from 'kysely'
import { ConfigError } from '../plugins/config.js'
import { defineResource, type Resource, type ResourceDeclaration } from '../schema/resource.js'

export interface HostResources {
  resources: Resource[]
  migrations?: Record<string, Migration>
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''

/**
 * A plain declaration, or a `defineResource` result (made by any copy of the package), declared
 * again here: whatever the module holds goes through the same checks.
 */
function asResource (entry: unknown, index: number, path: string): Resource {
  if (!isObject(entry)) throw new ConfigError(`${path}: resources[${index}] is not a resource or a declaration`)
  const declaration = isObject(entry.declaration) ? entry.declaration : entry
  try {
    return defineResource(declaration as unknown as ResourceDeclaration)
  } catch (error) {
    throw new ConfigError(`${path}: ${messageOf(error)}`)
  }
}

/**
 * Imports the module at `path` (relative to the working directory) and checks what it exports: an
 * array `resources`, and `migrations` as an object of Kysely migrations when present. Errors name
 * the path as `setting`, the operator's name for it (`RESOURCES_MODULE` or `resourcesModule`).
 */
export async function loadResourcesModule (path: string, setting = 'resourcesModule'): Promise<HostResources> {
  let exported: Record<string, unknown>
  try {
    exported = await import(pathToFileURL(resolve(path)).href) as Record<string, unknown>
  } catch (error) {
    throw new ConfigError(`${setting} ${path} could not be loaded: ${messageOf(error)}`)
  }
  if (!Array.isArray(exported.resources)) throw new ConfigError(`${setting} ${path} must export an array \`resources\``)
  const resources = exported.resources.map((entry: unknown, index) => asResource(entry, index, path))
  const { migrations } = exported
  if (migrations === undefined) return { resources }
  const valid = isObject(migrations) && Object.values(migrations).every((migration) => isObject(migration) && typeof migration.up === 'function')
  if (!valid) throw new ConfigError(`${setting} ${path}: \`migrations\` must be an object of migrations, each with an \`up\` function`)
  return { resources, migrations: migrations as Record<string, Migration> }
}
