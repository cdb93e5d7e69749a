import type { FastifyOtelInstrumentationOpts } from '@fastify/otel'
import type { Tracer, TracerProvider } from '@opentelemetry/api'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { requirePackages } from './optional-packages.js'

export interface TracingOptions {
  /**
   * Where the spans go. Default: the global tracer provider, the one the application's OpenTelemetry
   * SDK registered (`npm start` registers one when `OTEL_EXPORTER_OTLP_ENDPOINT` is set).
   * @example new NodeTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] })
   */
  tracerProvider?: TracerProvider
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Tandem's tracer; decorated only while tracing is on. The GraphQL plugin and the database plugin trace through it. */
    tandemTracer: Tracer
  }
}

/** HTTP server spans are named after the route, as OpenTelemetry's conventions ask: `GET /api/v1/users/:id`. */
const nameByRoute: NonNullable<FastifyOtelInstrumentationOpts['requestHook']> = (span, request) => {
  const route = request.routeOptions.url
  span.updateName(route === undefined ? request.method : `${request.method} ${route}`)
}

/**
 * OpenTelemetry traces: a span per request (@fastify/otel, with its spans for the route's hooks and
 * handler), and the tracer through which the database plugin gives embedded statements their spans and
 * the GraphQL plugin its operations. No span carries what a client sent as a value: the URL's query
 * string is redacted as the log redacts it, and errors are recorded by their code, not their message.
 * Register it before the other plugins, so that it sees every route. Registering it turns tracing on;
 * `tandem` registers it only when `tracing` or `otelExporterOtlpEndpoint` asks for it, so that a server
 * without tracing runs none of this.
 * @example
 * await app.register(tracing)                        // through the global tracer provider
 * await app.register(tracing, { tracerProvider })    // through one of the application's own
 */
async function tracing (app: FastifyInstance, options: TracingOptions): Promise<void> {
  // Registered already, by the application itself before `tandem`.
  if (app.hasDecorator('tandemTracer')) return
  requirePackages('tracing', 'tracing (OpenTelemetry spans)', 'leave tracing off: no `tracing` plugin, no `otelExporterOtlpEndpoint`')
  // Loaded only when tracing is on.
  const [{ trace }, { FastifyOtelInstrumentation }, { redactingTracerProvider }] =
    await Promise.all([import('@opentelemetry/api'), import('@fastify/otel'), import('./tracing-redaction.js')])
  // Every span made here, by @fastify/otel or by Tandem, goes through tracers that redact what
  // a client sent: the query string's secrets, errors' messages (plugins/tracing-redaction.ts).
  const provider = redactingTracerProvider(options.tracerProvider ?? trace.getTracerProvider())
  app.decorate('tandemTracer', provider.getTracer('tandem-api'))
  // An application that instruments Fastify itself already has its request spans.
  if (app.hasPlugin('@fastify/otel')) return
  const instrumentation = new FastifyOtelInstrumentation({ requestHook: nameByRoute })
  instrumentation.setTracerProvider(provider)
  await app.register(instrumentation.plugin())
}

export default fp(tracing, { name: 'tandem-tracing', fastify: '5.x' })
