// SQL statement spans. On a real server they come from @opentelemetry/instrumentation-pg, which patches
// the `pg` driver as it loads (plugins/tracing-sdk.ts); the embedded database has no such
// instrumentation, so its statements get theirs here, alike.
import type { PGlite } from '@electric-sql/pglite'
import { context, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api'
import { errorCode } from '../plugins/redaction.js'
import type { Db } from './connect.js'

/** A statement's command as instrumentation-pg reads it: its first word, upper-cased (`SELECT`, `BEGIN`). */
export function operationName (text: string): string {
  const trimmed = text.trim()
  const space = trimmed.search(/\s/)
  const word = (space === -1 ? trimmed : trimmed.slice(0, space)).toUpperCase()
  return word.endsWith(';') ? word.slice(0, -1) : word
}

/**
 * Gives each statement the embedded database runs inside a traced request a span, as instrumentation-pg
 * does for the `pg` driver: a client span with the statement's text, its parameters as `$1, $2…` and
 * never their values; a failed statement is recorded by its SQLSTATE. Statements outside any span
 * (migrations, housekeeping) make none, as with instrumentation-pg's `requireParentSpan`. Returns what
 * removes the spans again; a real server's database is left alone.
 */
export async function traceEmbeddedStatements (db: Db, tracer: Tracer): Promise<() => void> {
  const engine = (await import('./embedded.js')).engineOf(db)
  if (engine === undefined) return () => {}
  // Every statement of kysely-pglite-dialect goes through `query`.
  const query = engine.query
  const traced = async function (this: PGlite, text: string, params?: unknown[], options?: Parameters<PGlite['query']>[2]) {
    if (trace.getSpan(context.active()) === undefined) return query.call(this, text, params, options)
    const operation = operationName(text)
    const span = tracer.startSpan(`pglite.query:${operation}`, {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.query.text': text }
    })
    try {
      return await query.call(this, text, params, options)
    } catch (error) {
      // Its SQLSTATE, never its message: PostgreSQL quotes the value it could not read (`invalid
      // input syntax for type uuid: "…"`), and an error's detail the key that clashed.
      span.recordException({ name: errorCode(error) })
      span.setStatus({ code: SpanStatusCode.ERROR })
      throw error
    } finally {
      span.end()
    }
  }
  engine.query = traced as PGlite['query']
  return () => { engine.query = query }
}
