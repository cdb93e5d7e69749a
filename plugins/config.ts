import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { TandemOptionsSchema, type TandemConfig, type TandemOptions } from '../schema/options.js'
import { addressList } from './addresses.js'
import { createAjv } from './ajv.js'

export interface ResolvedConfig extends TandemConfig {
  jwtSecret: string
  /** True when no secret was given and a random one was made for this process. */
  jwtSecretGenerated: boolean
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

const validate = createAjv(true).compile(TandemOptionsSchema)
const optionKeys = Object.keys(TandemOptionsSchema.properties) as Array<keyof TandemConfig>

/** `rateLimitMax` → `RATE_LIMIT_MAX`. */
export const envName = (key: string): string => key.replace(/[A-Z]/g, (c) => '_' + c).toUpperCase()

/**
 * The values `configFromEnv` read, kept on the configuration it returns under this key: a symbol,
 * so that it is no option (the schema never sees it), and enumerable, so that object spread keeps
 * it — `{ ...config, db }` handed to `tandem` still knows where each value came from when an error
 * about one is found later, by a plugin or only once the database is open (`ADMIN_EMAIL` naming a
 * user's own account).
 */
const fromEnvironment = Symbol('tandem.fromEnvironment')

interface Sourced { [fromEnvironment]?: Readonly<Record<string, unknown>> }

/**
 * How the operator called the setting `key` of `config`, for messages: its environment variable
 * (`ADMIN_EMAIL`) when the value came from the environment (`configFromEnv`), else the option's
 * name (`adminEmail`). A value a host set over the environment's (`{ ...configFromEnv(env), port }`)
 * is its option's.
 * @example throw new ConfigError(`invalid configuration: ${settingName(config, 'corsOrigins')} needs security`)
 */
export function settingName (config: object, key: keyof TandemConfig): string {
  const read = (config as Sourced)[fromEnvironment]
  if (read === undefined || !Object.is((config as Record<string, unknown>)[key], read[key])) return key
  return envName(key)
}

/**
 * `options` made from `config` by picking some of its settings (as `connectOptions` does) with what
 * `config` knew of the environment: `settingName` on them still names a setting as the operator set it.
 */
export function withSettingNames<T extends object> (config: object, options: T): T {
  const read = (config as Sourced)[fromEnvironment]
  if (read !== undefined) (options as Sourced)[fromEnvironment] = read
  return options
}

/**
 * Why a `trustProxy` setting is refused, or undefined when it is not. Trusting every hop (`true`, or
 * a range of every address) takes the left-most `X-Forwarded-For` entry for the client's address,
 * and that entry is whatever the client sent: each request could choose its address and step
 * around every per-address limit. A proxy appends the address it saw, so the entries to trust are
 * counted from the right: a hop count, or the proxies' own addresses.
 */
export function refusedTrustProxy (setting: unknown, name = 'trustProxy'): string | undefined {
  const everyAddress = typeof setting === 'string' && setting.split(',').some((entry) => /\/0+$/.test(entry.trim()))
  if (setting !== true && setting !== 'true' && !everyAddress) return undefined
  return `invalid configuration: ${name} ${everyAddress ? 'covering every address' : 'true'} is refused: it trusts every X-Forwarded-For entry, ` +
    'and the left-most is the client\'s own; give the number of proxies in front (1 for one) or their addresses'
}

/**
 * Validates options once and fills in the defaults. Messages name a setting as the operator set it
 * (`settingName`): `RATE_LIMIT_MAX` for a value from the environment, `rateLimitMax` for an option.
 * The result keeps what the options knew of the environment.
 */
export function validateOptions (options: TandemOptions | Record<string, unknown> = {}): TandemConfig {
  const describe = (key: string): string => settingName(options, key as keyof TandemConfig)
  const input: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined && value !== '') input[key] = value
  }
  // Before the schema, which does not take it either, so as to say why.
  const refused = refusedTrustProxy(input.trustProxy, describe('trustProxy'))
  if (refused !== undefined) throw new ConfigError(refused)
  if (!validate(input)) {
    const error = validate.errors?.[0]
    const key = error?.instancePath.slice(1) || String(error?.params?.additionalProperty ?? error?.params?.missingProperty ?? '')
    // The value itself is never repeated: it may be a secret (JWT_SECRET, a password in DATABASE_URL)
    // and this line goes to the log.
    throw new ConfigError(`invalid configuration: ${describe(key)} ${error?.message ?? 'is invalid'}`)
  }
  const config = input as unknown as TandemConfig
  if (config.nodeEnv === 'production' && config.jwtSecret === undefined) {
    throw new ConfigError(`invalid configuration: ${describe('jwtSecret')} is required when ${describe('nodeEnv')} is production`)
  }
  if ((config.adminEmail === undefined) !== (config.adminPassword === undefined)) {
    throw new ConfigError(`invalid configuration: ${describe('adminEmail')} and ${describe('adminPassword')} go together`)
  }
  if (config.metricsPort !== undefined && config.metricsPort !== 0 && config.metricsPort === config.port) {
    throw new ConfigError(`invalid configuration: ${describe('metricsPort')} must differ from ${describe('port')}`)
  }
  try {
    addressList(config.metricsAllow)
  } catch (error) {
    throw new ConfigError(`invalid configuration: ${describe('metricsAllow')} ${(error as Error).message}`)
  }
  const read = (options as Sourced)[fromEnvironment]
  if (read !== undefined) (config as Sourced)[fromEnvironment] = read
  return config
}

/** Validated options with a secret: the given one, or a random one for this process. */
export function resolveConfig (options: TandemOptions = {}): ResolvedConfig {
  const config = validateOptions(options)
  return {
    ...config,
    jwtSecret: config.jwtSecret ?? randomBytes(32).toString('base64url'),
    jwtSecretGenerated: config.jwtSecret === undefined
  }
}

/**
 * Reads the options from environment variables, as the server entry point does (plugins never
 * read `process.env`). The result remembers that its values came from there (see `settingName`), and keeps remembering
 * through object spread: an error found later about one of them names its variable.
 * @example await app.register(tandem, { ...configFromEnv(process.env), db })
 */
export function configFromEnv (env: NodeJS.ProcessEnv): TandemConfig {
  const options: Record<string, unknown> & Sourced = {}
  for (const key of optionKeys) options[key] = env[envName(key)]
  // As read, for the messages of validation itself; then as validated (numbers, defaults).
  options[fromEnvironment] = { ...options }
  const config: TandemConfig & Sourced = validateOptions(options)
  config[fromEnvironment] = Object.fromEntries(Object.entries(config))
  return config
}

/**
 * The configuration a plugin runs with: the one already decorated on the instance (so that every
 * Tandem plugin in an application shares one secret), or else these options resolved and decorated.
 */
export function useConfig (app: FastifyInstance, options: TandemOptions): ResolvedConfig {
  if (app.hasDecorator('tandemConfig')) return app.tandemConfig
  const config = resolveConfig(options)
  if (config.jwtSecretGenerated) {
    app.log.warn('no jwtSecret (JWT_SECRET) set: using a random one for this process; tokens and cursors will not survive a restart')
  }
  app.decorate('tandemConfig', config)
  return config
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Tandem's resolved configuration, shared by all of its plugins. */
    tandemConfig: ResolvedConfig
  }
}
