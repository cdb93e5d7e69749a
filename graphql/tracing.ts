import { context, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api'
import type { FastifyInstance, FastifyReply, FastifyRequest, onRouteHookHandler, RouteOptions } from 'fastify'
import { getOperationAST } from 'graphql'
import type { onResolutionHookHandler, preExecutionHookHandler } from 'mercurius'

/** OpenTelemetry's name for an operation whose type is not known (yet, or ever: the document was refused). */
const UNKNOWN_OPERATION = 'GraphQL Operation'

interface ReportedError { message: string, extensions?: { code?: unknown } }

function recordErrors (span: Span, errors: readonly ReportedError[]): void {
  for (const error of errors) {
    span.recordException({ name: typeof error.extensions?.code === 'string' ? error.extensions.code : 'GraphQLError', message: error.message })
  }
  span.setStatus({ code: SpanStatusCode.ERROR, message: errors[0]?.message })
}

/** What a refused request threw: Mercurius's validation error carries the GraphQL errors it stands for. */
function errorsOf (thrown: unknown): ReportedError[] {
  const listed = (thrown as { errors?: unknown } | null)?.errors
  if (Array.isArray(listed) && listed.length > 0) return listed as ReportedError[]
  return [{ message: thrown instanceof Error ? thrown.message : String(thrown) }]
}

function operationNameOf (request: FastifyRequest): string | undefined {
  const sent = (request.method === 'GET' ? request.query : request.body) as { operationName?: unknown } | null | undefined
  return typeof sent?.operationName === 'string' ? sent.operationName : undefined
}

type Handler = (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) => unknown

export interface OperationTracing {
  /** Mercurius's `additionalRouteOptions`: the operation span takes the place of @fastify/otel's handler span. */
  routeOptions: { config: { otel: { instrumentHandler: false } } }
  /** Wraps the handler of `path`'s routes, so that the operation's span is active while it runs. */
  onRoute: onRouteHookHandler
  preExecution: preExecutionHookHandler
  onResolution: onResolutionHookHandler
}

/**
 * A span per GraphQL operation over HTTP, child of the request's span and parent of the spans of the
 * statements its resolvers run, named `query Users` (`graphql.operation.type`, `graphql.operation.name`)
 * in Mercurius's `preExecution` hook, its errors recorded in `onResolution` (or when the request is
 * refused before execution: unparsable, invalid, over a limit). Mercurius's hooks cannot make a span
 * the active one around execution, so the span is started by the route's handler, wrapped here.
 */
export function operationTracing (tracer: Tracer, path: string): OperationTracing {
  const spans = new WeakMap<FastifyRequest, Span>()

  const traced = (handler: Handler): Handler => function (request, reply) {
    // @fastify/otel's request context: after a body is read, Node's async context no longer holds it.
    const otel = typeof request.opentelemetry === 'function' ? request.opentelemetry() : undefined
    const parent = otel?.instrumented === true && otel.context != null ? otel.context : context.active()
    const span = tracer.startSpan(UNKNOWN_OPERATION, undefined, parent)
    spans.set(request, span)
    return context.with(trace.setSpan(parent, span), async () => {
      try {
        return await handler.call(this, request, reply)
      } catch (error) {
        recordErrors(span, errorsOf(error))
        throw error
      } finally {
        span.end()
      }
    })
  }

  return {
    routeOptions: { config: { otel: { instrumentHandler: false } } },
    onRoute (route: RouteOptions) {
      if (route.url === path) route.handler = traced(route.handler as Handler) as RouteOptions['handler']
    },
    preExecution (_schema, document, { reply: { request } }) {
      const span = spans.get(request)
      if (span === undefined) return
      const operation = getOperationAST(document, operationNameOf(request))
      if (operation == null) return
      const name = operation.name?.value
      span.updateName(name === undefined ? operation.operation : `${operation.operation} ${name}`)
      span.setAttribute('graphql.operation.type', operation.operation)
      if (name !== undefined) span.setAttribute('graphql.operation.name', name)
    },
    onResolution ({ errors }, { reply: { request } }) {
      const span = spans.get(request)
      if (span !== undefined && errors !== undefined && errors.length > 0) recordErrors(span, errors)
    }
  }
}
