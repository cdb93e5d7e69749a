import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'

type ChildLoggerFactory = NonNullable<FastifyServerOptions['childLoggerFactory']>
type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type Bindings = Record<string, unknown>
type Logger = FastifyBaseLogger & { isLevelEnabled?: (level: string) => boolean, bindings?: () => Bindings }

/**
 * A request's logger that becomes the real child logger (with the request id) when the request
 * first logs at an enabled level. pino makes a child eagerly and runs the redaction paths over its
 * bindings, work every served request paid, while at the production level (`warn`) most requests
 * never log anything (see PERFORMANCE-DECISIONS.md, 'Request loggers made on first use').
 */
class RequestLogger {
  readonly #parent: Logger
  readonly #bindings: Bindings
  #child: Logger | undefined

  constructor (parent: Logger, bindings: Bindings) {
    this.#parent = parent
    this.#bindings = bindings
  }

  #logger (): Logger {
    this.#child ??= this.#parent.child(this.#bindings) as Logger
    return this.#child
  }

  #log (level: Level, args: unknown[]): void {
    const current = this.#child ?? this.#parent
    if (current.isLevelEnabled?.(level) === false) return
    (this.#logger()[level] as (...args: unknown[]) => void)(...args)
  }

  get level (): string { return (this.#child ?? this.#parent).level }
  set level (level: string) { this.#logger().level = level }
  isLevelEnabled (level: string): boolean { return (this.#child ?? this.#parent).isLevelEnabled?.(level) ?? true }
  bindings (): Bindings { return this.#logger().bindings?.() ?? this.#bindings }
  child (bindings: Bindings, options?: object): FastifyBaseLogger { return this.#logger().child(bindings, options) }
  fatal (...args: unknown[]): void { this.#log('fatal', args) }
  error (...args: unknown[]): void { this.#log('error', args) }
  warn (...args: unknown[]): void { this.#log('warn', args) }
  info (...args: unknown[]): void { this.#log('info', args) }
  debug (...args: unknown[]): void { this.#log('debug', args) }
  trace (...args: unknown[]): void { this.#log('trace', args) }
  silent (): void {}
}

/**
 * Fastify's `childLoggerFactory` with request loggers made on first use. A route with a log level
 * or serializers of its own gets its child at once, as Fastify would make it.
 */
export const requestLogger: ChildLoggerFactory = (logger, bindings, options) => {
  if (options.level !== undefined || options.serializers !== undefined) return logger.child(bindings, options)
  return new RequestLogger(logger, bindings) as unknown as FastifyBaseLogger
}
