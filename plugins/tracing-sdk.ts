// The OpenTelemetry SDK of the server entry point. Applications that register Tandem's plugins set
// up their own SDK; the plugins only use the global tracer provider (or the one given to them).
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, NodeTracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace-node'
import { operationName } from '../db/tracing.js'
import { redactingTracerProvider } from './tracing-redaction.js'

/**
 * Registers a tracer provider for the whole process (with Node's async context, so that spans find
 * their parents), sending its spans to `processor`: by default, in batches to the OTLP/HTTP collector
 * that `OTEL_EXPORTER_OTLP_ENDPOINT` names (the exporter reads that variable, and the SDK's other
 * OTLP variables, itself). Also enables @opentelemetry/instrumentation-pg, which patches the `pg`
 * driver as Node loads it: call this before anything imports `pg`. `pg` is CommonJS, so this works
 * in an ES module application without a loader hook.
 * @example
 * const provider = startTracing()
 * const { connect } = await import('./db/connect.js')
 */
export function startTracing (processor: SpanProcessor = new BatchSpanProcessor(new OTLPTraceExporter())): NodeTracerProvider {
  // Named `tandem-api` unless OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) says otherwise.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'tandem-api' }))
    .merge(detectResources({ detectors: [envDetector] }))
  const provider = new NodeTracerProvider({ resource, spanProcessors: [processor] })
  provider.register()
  const pg = new PgInstrumentation({
    // Statements outside a request (migrations, housekeeping, the revocation poll) make no trace.
    requireParentSpan: true,
    // The statement's text with its `$1, $2…`, never the values bound to them (the default, said).
    enhancedDatabaseReporting: false,
    // A prepared statement's name (`tandem_7`) differs from one pooled connection to the next: its
    // span is named by its command, as an unprepared statement's is.
    requestHook: (span, { query, connection }) => {
      if (query.name !== undefined) span.updateName(`pg.query:${operationName(query.text)}${connection.database === undefined ? '' : ` ${connection.database}`}`)
    }
  })
  // Redacted as Tandem's own spans are: a failed statement's status would carry PostgreSQL's
  // message, which can quote the value it refused.
  pg.setTracerProvider(redactingTracerProvider(provider))
  return provider
}
