import { hash } from 'node:crypto'
import { badRequest } from '../schema/errors.js'
import { hmacBase64url } from './hmac.js'

export type KeyValue = string | number | null

/** What a cursor remembers: where the last page ended, under which sort and which filters. */
export interface CursorPosition {
  /** sort field */
  s: string
  /** direction */
  d: 'asc' | 'desc'
  /** fingerprint of the filters */
  f: string
  /** sort value of the last row (absent when sorting by id alone) */
  v?: KeyValue
  /** key of the last row: a number, or the text of a bigint, uuid or text key */
  i: number | string
}

// 12 bytes of HMAC-SHA256: 16 base64url characters, no padding.
const SIGNATURE_CHARS = 16

function sign (secret: string, body: string): string {
  return hmacBase64url(secret, body).slice(0, SIGNATURE_CHARS)
}

const printOf = (canonical: string): string => hash('sha256', canonical, 'base64url').slice(0, 12)
// The fingerprint of no filters at all, the most common list: nothing to sort, serialize or look up.
const UNFILTERED = printOf('[]')
// Fingerprints by the filters' canonical JSON: most pages of a list are asked with the same few filters
// (see PERFORMANCE-DECISIONS.md, 'Filter fingerprints memoized').
const fingerprints = new Map<string, string>()

/** A short, stable fingerprint of the filters a list was made with. */
export function fingerprint (filters: Record<string, unknown>): string {
  const given = Object.keys(filters).filter((key) => filters[key] !== undefined)
  if (given.length === 0) return UNFILTERED
  const canonical = JSON.stringify(given.sort().map((key) => [key, filters[key]]))
  let print = fingerprints.get(canonical)
  if (print === undefined) {
    if (fingerprints.size >= 1024) fingerprints.clear()
    fingerprints.set(canonical, print = printOf(canonical))
  }
  return print
}

export function encodeCursor (secret: string, position: CursorPosition): string {
  const body = Buffer.from(JSON.stringify(position)).toString('base64url')
  return `${body}.${sign(secret, body)}`
}

const invalid = () => badRequest('cursor is malformed or was not made by this server', 'cursor')

/** Whether two signatures are equal, in a time that does not depend on where they differ. */
function sameSignature (given: string, expected: string): boolean {
  let difference = given.length ^ expected.length
  for (let at = 0; at < expected.length; at++) difference |= given.charCodeAt(at) ^ expected.charCodeAt(at)
  return difference === 0
}

/** Verifies the signature and shape of a cursor; a bad one is a 400 on `cursor`. */
export function decodeCursor (secret: string, cursor: string): CursorPosition {
  const dot = cursor.indexOf('.')
  if (dot === -1) throw invalid()
  const body = cursor.slice(0, dot)
  if (!sameSignature(cursor.slice(dot + 1), sign(secret, body))) throw invalid()
  let position: unknown
  try {
    position = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
  } catch {
    throw invalid()
  }
  if (!isPosition(position)) throw invalid()
  return position
}

function isPosition (value: unknown): value is CursorPosition {
  if (value === null || typeof value !== 'object') return false
  const p = value as Record<string, unknown>
  const v = p.v
  return typeof p.s === 'string' && (p.d === 'asc' || p.d === 'desc') && typeof p.f === 'string' &&
    (Number.isSafeInteger(p.i) || typeof p.i === 'string') && (v === undefined || v === null || typeof v === 'string' || typeof v === 'number')
}
