// An OTLP/HTTP collector of the test's own, on loopback: what the OpenTelemetry exporter posts to it.
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { Test } from './database.js'

export interface OtlpValue { stringValue?: string, intValue?: number | string }
export interface OtlpSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  attributes?: Array<{ key: string, value: OtlpValue }>
  events?: Array<{ name: string, attributes?: OtlpSpan['attributes'] }>
  status?: { code?: number, message?: string }
}
interface OtlpExport { resourceSpans: Array<{ resource?: { attributes?: OtlpSpan['attributes'] }, scopeSpans: Array<{ spans: OtlpSpan[] }> }> }

/** OTLP's `SPAN_KIND_SERVER`. */
export const SERVER = 2

export interface Collector {
  /** Where to point `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  url: string
  spans: OtlpSpan[]
  /** The paths the exports were posted to. */
  paths: string[]
  /** Every export's body as it arrived: spans, their events and their resource, byte for byte. */
  bodies: string[]
  services: Set<string | undefined>
}

/** An OTLP/HTTP (JSON) collector on a free port of 127.0.0.1, closed when the test ends. */
export async function collector (t: Test): Promise<Collector> {
  const received: Collector = { url: '', spans: [], paths: [], bodies: [], services: new Set() }
  const server = createServer((request, response) => {
    let text = ''
    request.on('data', (chunk: Buffer) => { text += chunk.toString() })
    request.on('end', () => {
      received.paths.push(request.url ?? '')
      received.bodies.push(text)
      for (const resource of (JSON.parse(text) as OtlpExport).resourceSpans) {
        received.services.add(resource.resource?.attributes?.find((a) => a.key === 'service.name')?.value?.stringValue)
        for (const scope of resource.scopeSpans) received.spans.push(...scope.spans)
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.close() })
  const address = server.address()
  received.url = `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}`
  return received
}

/** A span's (or an event's) attribute, as a string or a number. */
export const attribute = (span: Pick<OtlpSpan, 'attributes'> | undefined, key: string): string | number | undefined => {
  const value = span?.attributes?.find((a) => a.key === key)?.value
  return value?.stringValue ?? (value?.intValue === undefined ? undefined : Number(value.intValue))
}

/** Whether `ancestor` is `span`'s parent, or its parent's parent, and so on. */
export function descends (span: OtlpSpan, ancestor: OtlpSpan | undefined, spans: OtlpSpan[]): boolean {
  const byId = new Map(spans.map((s) => [s.spanId, s]))
  for (let parent = span.parentSpanId; parent !== undefined && parent !== ''; parent = byId.get(parent)?.parentSpanId) {
    if (parent === ancestor?.spanId) return true
  }
  return false
}
