import type { FastifySerializerCompiler } from 'fastify'
import fastJsonStringify from 'fast-json-stringify'

type Serializer = (data: unknown) => string

// Fastify compiles a response schema for every route and status it is declared on: Tandem declares
// the same few (its error body on every error status of every route, under /api/v1 and /api alike),
// about 780 compilations of 24 different schemas per application. Each is the same function of the
// schema alone, so it is compiled once per process: at most once per schema object, and schemas
// equal as JSON (a declaration's, remade by each application) share theirs.
const byObject = new WeakMap<object, Serializer>()
const byText = new Map<string, Serializer>()

/**
 * Fastify's serializer for the routes of a scope, as Fastify's default compiles it
 * (fast-json-stringify, no shared schemas: Tandem adds none), compiled once per schema.
 * @example scope.setSerializerCompiler(serializerCompiler)
 */
export const serializerCompiler: FastifySerializerCompiler<object> = ({ schema }) => {
  const known = byObject.get(schema)
  if (known !== undefined) return known
  const text = JSON.stringify(schema)
  const serializer = byText.get(text) ?? (fastJsonStringify(schema) as Serializer)
  byText.set(text, serializer)
  byObject.set(schema, serializer)
  return serializer
}
