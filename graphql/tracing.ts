import { context, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api'
import type { FastifyInstance, FastifyReply, FastifyRequest, onRouteHookHandler, RouteOptions } from 'fastify'
import { getOperationAST } from 'graphql'
import type { onResolutionHookHandler, preExecutionHookHandler } from 'mercurius'
import { errorClass, errorCode } from '../plugins/redaction.js'

/** OpenTelemetry's name for an operation whose type is not known (yet, or ever: the document was refused). */
const UNKNOWN_OPERATION = 'GraphQL Operation'

/**
 * Records each error by its code, as the client's `errors[].extensions.code` names it (else the
 * thrown error's code or class), never by its message: graphql-js quotes in its messages the
 * variables and literals it refused, passwords included.
 */
function recordErrors (span: Span, codes: readonly string[]): void {
  for (const code of codes) span.recordException({ name: code })
  span.setStatus({ code: SpanStatusCode.ERROR })
}

/** The codes of what a refused request threw: Mercurius's validation error carries the GraphQL errors it stands for. */
function codesOf (thrown: unknown): string[] {
  const listed = (thrown as { errors?: unknown } | null)?.errors
  const own = errorCode(thrown)
  if (!Array.isArray(listed) || listed.length === 0) return [own]
  // A listed error without a code of its own is named by the one that carried it.
  return listed.map((error: unknown) => errorCode(error) === errorClass(error) ? own : errorCode(error))
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
 * in Mercurius's `preExecution` hook, its errors recorded by their codes in `onResolution` (or when the
 * request is refused before execution: unparsable, invalid, over a limit). Mercurius's hooks cannot
 * make a span the active one around execution, so the span is started by the route's handler, wrapped here.
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
        recordErrors(span, codesOf(error))
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
      if (span !== undefined && errors !== undefined && errors.length > 0) recordErrors(span, errors.map((error) => errorCode(error)))
    }
  }
}
