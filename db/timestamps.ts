import pg from 'pg'

const TIMESTAMPTZ = 1184
const fallback = pg.types.getTypeParser(TIMESTAMPTZ) as (text: string) => Date
const plainFallback = pg.types.getTypeParser(1114) as (text: string) => Date

const PLUS = 43
const MINUS = 45
const COLON = 58
const DOT = 46
const SPACE = 32

const digit = (text: string, at: number): number => text.charCodeAt(at) - 48
const twoDigits = (text: string, at: number): number => digit(text, at) * 10 + digit(text, at + 1)

/**
 * Days from 1970-01-01 to a date of the proleptic Gregorian calendar, as Date.UTC counts them
 * (H. Hinnant's `days_from_civil`): arithmetic, where Date.UTC is a call into the runtime.
 */
function daysFromCivil (year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yearOfEra = y - era * 400
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1
  return era * 146_097 + yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear - 719_468
}

/**
 * PostgreSQL's text form of a `timestamptz` (`2026-11-21 02:26:12.123+00`) as a Date, without the
 * regular expressions of `postgres-date`, which pg uses by default: every list row carries one or
 * more of these, and parsing them was the costliest part of reading a row. Anything but the common
 * `YYYY-MM-DD HH:MM:SS[.ffffff]±HH[:MM]` (BC dates, years past 9999, infinity) goes to pg's parser.
 * See PERFORMANCE-DECISIONS.md, 'timestamptz parsed by hand'.
 */
export function parseTimestamptz (text: string): Date {
  const length = text.length
  if (length < 22 || text.charCodeAt(4) !== MINUS || text.charCodeAt(10) !== SPACE) return fallback(text)
  let at = 19
  let millis = 0
  if (text.charCodeAt(at) === DOT) {
    let scale = 100
    for (at = 20; at < length; at++) {
      const value = digit(text, at)
      if (value < 0 || value > 9) break
      millis += value * scale
      scale /= 10
    }
  }
  const sign = text.charCodeAt(at)
  if (sign !== PLUS && sign !== MINUS) return fallback(text)
  let offsetMinutes = twoDigits(text, at + 1) * 60
  if (length === at + 6 && text.charCodeAt(at + 3) === COLON) offsetMinutes += twoDigits(text, at + 4)
  else if (length !== at + 3) return fallback(text)
  const year = twoDigits(text, 0) * 100 + twoDigits(text, 2)
  const utc = ((daysFromCivil(year, twoDigits(text, 5), twoDigits(text, 8)) * 24 + twoDigits(text, 11)) * 60 +
    twoDigits(text, 14)) * 60_000 + twoDigits(text, 17) * 1000 + Math.floor(millis)
  const date = new Date(sign === PLUS ? utc - offsetMinutes * 60_000 : utc + offsetMinutes * 60_000)
  return Number.isNaN(date.getTime()) ? fallback(text) : date
}

const TWO_DIGITS = Array.from({ length: 60 }, (_, n) => String(n).padStart(2, '0'))

/**
 * `date.toISOString()`, written from the date's UTC fields: V8's `toISOString` is a call into the
 * runtime that costs several times more, and GraphQL writes every `DateTime` it answers this way
 * (fast-json-stringify does the same for REST's). Years outside 1000–9999 and invalid dates are
 * left to `toISOString` (which throws for the latter). See PERFORMANCE-DECISIONS.md, 'DateTime
 * written from its UTC fields'.
 */
export function isoString (date: Date): string {
  const year = date.getUTCFullYear()
  if (!(year >= 1000 && year <= 9999)) return date.toISOString()
  const ms = date.getUTCMilliseconds()
  return `${year}-${TWO_DIGITS[date.getUTCMonth() + 1] ?? ''}-${TWO_DIGITS[date.getUTCDate()] ?? ''}T${TWO_DIGITS[date.getUTCHours()] ?? ''}:` +
    `${TWO_DIGITS[date.getUTCMinutes()] ?? ''}:${TWO_DIGITS[date.getUTCSeconds()] ?? ''}.${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`
}

/**
 * PostgreSQL's text form of a `timestamp` (without time zone, `2026-11-21 02:26:12.123`) as the Date
 * of that wall-clock time in UTC, whatever the process's time zone (pg's own parser reads it in the
 * process's zone, so one value was answered as another instant on each server). A value written back
 * as the ISO string it is answered as (`…Z`) is stored as the same time: PostgreSQL ignores a zone
 * given to a `timestamp`.
 */
export function parseTimestamp (text: string): Date {
  // `infinity` and BC dates, which end in letters, are left to pg's parser.
  const last = text.charCodeAt(text.length - 1) - 48
  return last >= 0 && last <= 9 ? parseTimestamptz(text + '+00') : plainFallback(text)
}

/**
 * A `date` is a calendar day, not an instant: kept as PostgreSQL's text (`2027-02-20`, ISO-8601), where
 * pg made it a Date at the process's local midnight and PGlite at UTC midnight, which a process west of
 * UTC then answered as the day before.
 */
export const parseDate = (text: string): string => text
