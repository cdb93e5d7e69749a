import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import { badRequest } from '../schema/errors.js'

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
  /** id of the last row */
  i: number
}

const SIGNATURE_BYTES = 12

function sign (secret: string, body: string): Buffer {
  return createHmac('sha256', secret).update(body).digest().subarray(0, SIGNATURE_BYTES)
}

/** A short, stable fingerprint of the filters a list was made with. */
export function fingerprint (filters: Record<string, unknown>): string {
  const canonical = Object.keys(filters).sort()
    .filter((key) => filters[key] !== undefined)
    .map((key) => [key, filters[key]])
  return createHash('sha256').update(JSON.stringify(canonical)).digest('base64url').slice(0, 12)
}

export function encodeCursor (secret: string, position: CursorPosition): string {
  const body = Buffer.from(JSON.stringify(position)).toString('base64url')
  return `${body}.${sign(secret, body).toString('base64url')}`
}

const invalid = () => badRequest('cursor is malformed or was not made by this server', 'cursor')

/** Verifies the signature and shape of a cursor; a bad one is a 400 on `cursor`. */
export function decodeCursor (secret: string, cursor: string): CursorPosition {
  const [body, signature, extra] = cursor.split('.')
  if (body === undefined || signature === undefined || extra !== undefined) throw invalid()
  const given = Buffer.from(signature, 'base64url')
  const expected = sign(secret, body)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid()
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
    Number.isSafeInteger(p.i) && (v === undefined || v === null || typeof v === 'string' || typeof v === 'number')
}
