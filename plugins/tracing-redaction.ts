// Spans as they leave the process carry no value a client sent: not its query string's secrets, not
// its variables, body or literals quoted by an error. Every span Tandem makes or has made — the
// requests' and their hooks' (@fastify/otel), the GraphQL operations', the statements' (its own on
// the embedded database, instrumentation-pg's under `npm start`) — goes through the tracers given
// here, whatever the libraries set on it, and whatever text graphql-js, JSON.parse or PostgreSQL
// put into an error's message: the redaction does not depend on what that text is.
import { context, trace, type Attributes, type AttributeValue, type Context, type Exception, type Link, type Span, type SpanOptions, type SpanStatus, type TimeInput, type Tracer, type TracerProvider } from '@opentelemetry/api'
import { errorClass, errorCode, redactQuery, redactUrl, splitUrl } from './redaction.js'

/** The frames of a stack, without its first lines: they repeat the message. */
function framesOf (stack: unknown): string | undefined {
  if (typeof stack !== 'string') return undefined
  const frames = stack.split('\n').filter((line) => /^\s+at /.test(line))
  return frames.length === 0 ? undefined : frames.join('\n')
}

// What instrumentation-pg records of a failed statement: a sentence of its own with the SQLSTATE.
const PG_SANITIZED = /^PostgreSQL error of type '[\w$.-]{1,100}' occurred \(code: ([\w]{1,20})\)$/

/** An error as a span may record it: its code (or class) as its type, its class as its message, its frames. */
function redactedException (exception: Exception): Exception {
  const sqlState = typeof exception === 'string' ? PG_SANITIZED.exec(exception)?.[1] : undefined
  if (sqlState !== undefined) return { name: sqlState, message: 'DatabaseError' }
  const type = errorCode(exception)
  const frames = typeof exception === 'string' ? undefined : framesOf(exception.stack)
  return { name: type, message: errorClass(exception), ...(frames === undefined ? {} : { stack: `${type}\n${frames}` }) }
}

// Attributes that can hold what a client sent, and what they become. Those of OpenTelemetry's
// conventions that Tandem's libraries set (url.path holds the query string in @fastify/otel), or
// could set with an option (instrumentation-pg's `enhancedDatabaseReporting`), or that an exception
// event holds; anything else passes.
const DROP = (): undefined => undefined
const redactions: Record<string, (value: AttributeValue) => AttributeValue | undefined> = {
  'url.query': (value) => typeof value === 'string' ? redactQuery(value) : DROP(),
  'url.full': (value) => typeof value === 'string' ? redactUrl(value) : DROP(),
  'http.url': (value) => typeof value === 'string' ? redactUrl(value) : DROP(),
  'http.target': (value) => typeof value === 'string' ? redactUrl(value) : DROP(),
  'db.postgresql.values': DROP,
  'graphql.document': DROP,
  'http.request.body': DROP,
  'http.request.header.authorization': DROP,
  'http.request.header.cookie': DROP,
  'http.response.header.set-cookie': DROP,
  'exception.message': DROP,
  'exception.stacktrace': (value) => framesOf(value)
}
const DROPPED_PREFIX = /^db\.query\.parameter\./

function redactAttributes (attributes: Attributes): Attributes {
  const redacted: Attributes = {}
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || DROPPED_PREFIX.test(key)) continue
    if (key === 'url.path' && typeof value === 'string') {
      // OpenTelemetry's url.path is the path alone; the query string is url.query, redacted.
      const { path, query } = splitUrl(value)
      redacted['url.path'] = path
      if (query !== undefined) redacted['url.query'] = query
      continue
    }
    const redaction = redactions[key]
    const kept = redaction === undefined ? value : redaction(value)
    if (kept !== undefined) redacted[key] = kept
  }
  return redacted
}

/** A span that passes on to its SDK's span only what may leave the process. */
class RedactingSpan implements Span {
  readonly #span: Span
  constructor (span: Span) { this.#span = span }

  spanContext () { return this.#span.spanContext() }
  setAttribute (key: string, value: AttributeValue): this { return this.setAttributes({ [key]: value }) }
  setAttributes (attributes: Attributes): this { this.#span.setAttributes(redactAttributes(attributes)); return this }
  addEvent (name: string, attributesOrStartTime?: Attributes | TimeInput, startTime?: TimeInput): this {
    const isAttributes = typeof attributesOrStartTime === 'object' && !(attributesOrStartTime instanceof Date) && !Array.isArray(attributesOrStartTime)
    this.#span.addEvent(name, isAttributes ? redactAttributes(attributesOrStartTime) : attributesOrStartTime, startTime)
    return this
  }

  addLink (link: Link): this { this.#span.addLink(link); return this }
  addLinks (links: Link[]): this { this.#span.addLinks(links); return this }
  // A status's description is free text, an error's message as often as not: the code alone passes.
  setStatus ({ code }: SpanStatus): this { this.#span.setStatus({ code }); return this }
  updateName (name: string): this { this.#span.updateName(name); return this }
  end (endTime?: TimeInput): void { this.#span.end(endTime) }
  isRecording (): boolean { return this.#span.isRecording() }
  recordException (exception: Exception, time?: TimeInput): void { this.#span.recordException(redactedException(exception), time) }
}

class RedactingTracer implements Tracer {
  readonly #tracer: Tracer
  constructor (tracer: Tracer) { this.#tracer = tracer }

  startSpan (name: string, options?: SpanOptions, parent?: Context): Span {
    const given = options?.attributes === undefined ? options : { ...options, attributes: redactAttributes(options.attributes) }
    const span = this.#tracer.startSpan(name, given, parent)
    // A span that records nothing has nothing to redact.
    return span.isRecording() ? new RedactingSpan(span) : span
  }

  startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, fn: F): ReturnType<F>
  startActiveSpan<F extends (span: Span) => unknown>(name: string, options: SpanOptions, parent: Context, fn: F): ReturnType<F>
  startActiveSpan<F extends (span: Span) => unknown> (name: string, ...args: [F] | [SpanOptions, F] | [SpanOptions, Context, F]): ReturnType<F> {
    const fn = args[args.length - 1] as F
    const options = args.length > 1 ? args[0] as SpanOptions : undefined
    const parent = args.length > 2 ? args[1] as Context : context.active()
    const span = this.startSpan(name, options, parent)
    return context.with(trace.setSpan(parent, span), () => fn(span) as ReturnType<F>)
  }
}

const redacting = new WeakSet<TracerProvider>()

/**
 * `provider`, whose tracers redact every span they make: the query string's secret-looking values
 * (as the log redacts them: plugins/redaction.ts), status descriptions, exception messages (an
 * exception is recorded by its code or class, and its stack's frames), and the attributes that
 * would hold values (statement parameters, GraphQL documents, bodies, credentials' headers).
 * @example instrumentation.setTracerProvider(redactingTracerProvider(trace.getTracerProvider()))
 */
export function redactingTracerProvider (provider: TracerProvider): TracerProvider {
  if (redacting.has(provider)) return provider
  const wrapped: TracerProvider = { getTracer: (name, version, options) => new RedactingTracer(provider.getTracer(name, version, options)) }
  redacting.add(wrapped)
  return wrapped
}
