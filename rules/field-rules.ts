// Field read rules (`defineResource`'s `fields`, and the users' email): a field that only the row's
// owner (and administrators) may read is null for every other caller, in the same shape. The one
// implementation of the rule, which every transport and every way a row is read goes through.
import { OWNER_FILTER, READABLE_SEARCH, type Row } from '../db/pagination.js'
import type { AccessUser } from '../plugins/auth.js'
import type { FieldReadRule, FieldRules } from '../schema/resource.js'

// What a create answers its own caller: the row as written, whole (they wrote it). GraphQL's field
// resolvers see only the object they resolve on, so the answer itself is marked.
const writtenByCaller = new WeakSet<object>()

/** Marks a create's answer as its caller's own: the field rules hide nothing of it from them. */
export function answeredToWriter<T extends object> (answer: T): T {
  writtenByCaller.add(answer)
  return answer
}

/** Whether `answer` is a create's answer to its own caller (`answeredToWriter`). */
export const isAnswerToWriter = (answer: object): boolean => writtenByCaller.has(answer)

/** Whether `caller` reads a field of `rule` on the row whose owner is `owner` (a row without its owner column: only an administrator, under `ownerOrAdmin`). */
export function mayReadField (rule: FieldReadRule, caller: AccessUser | undefined, owner: unknown): boolean {
  if (caller === undefined) return false
  if (rule === 'ownerOrAdmin' && caller.role === 'admin') return true
  return owner !== undefined && owner !== null && Number(owner) === caller.sub
}

/** Whether `caller` reads a field of `rule` on every row (an administrator, under `ownerOrAdmin`): a filter on it then tells nothing. */
const readsEveryRow = (rule: FieldReadRule | undefined, caller: AccessUser | undefined): boolean =>
  rule === undefined || (rule === 'ownerOrAdmin' && caller?.role === 'admin')

/**
 * `row` as `caller` may see it: each field with a read rule that does not admit them is null (a
 * field the row does not carry, as `fields=` left it out, stays out). A copy when anything is
 * hidden: the row itself is never changed (an event may carry it to other subscribers). A create's
 * answer to its caller (`answeredToWriter`) is shown whole.
 */
export function shownRow<T extends Record<string, unknown>> (rules: FieldRules | undefined, caller: AccessUser | undefined, row: T): T {
  if (rules === undefined || writtenByCaller.has(row)) return row
  let shown: T | undefined
  for (const [field, rule] of Object.entries(rules.fields)) {
    if (row[field] === undefined || row[field] === null || mayReadField(rule, caller, row[rules.owner])) continue
    shown ??= { ...row }
    ;(shown as Record<string, unknown>)[field] = null
  }
  return shown ?? row
}

/** `shownRow` of each row. */
export function shownRows<T extends Record<string, unknown>> (rules: FieldRules | undefined, caller: AccessUser | undefined, rows: readonly T[]): T[] {
  return rules === undefined ? rows as T[] : rows.map((row) => shownRow(rules, caller, row))
}

/**
 * Narrows the filters of a list that `caller` reads so that they cannot tell a hidden value: a filter
 * on a field `caller` does not read on every row matches their own rows only (`OWNER_FILTER`), and
 * `q` over such a field also needs to match the search fields they read on every row
 * (`READABLE_SEARCH`), or, when there are none, their own rows only. `filtered` maps each filter's name
 * to its field; `search` are the fields `q` looks at. The list needs the filters `OWNER_FILTER` and,
 * when `search` mixes hidden and readable fields, `READABLE_SEARCH`.
 */
export function narrowFilters (
  rules: FieldRules | undefined,
  caller: AccessUser | undefined,
  filters: Record<string, unknown>,
  filtered: ReadonlyArray<{ readonly name: string, readonly field: string }>,
  search: readonly string[]
): void {
  if (rules === undefined) return
  const hidden = (field: string): boolean => !readsEveryRow(rules.fields[field], caller)
  let ownRows = filtered.some(({ name, field }) => filters[name] !== undefined && hidden(field))
  if (filters.q !== undefined && search.some(hidden)) {
    if (search.some((field) => !hidden(field))) filters[READABLE_SEARCH] = filters.q
    else ownRows = true
  }
  if (ownRows) filters[OWNER_FILTER] = caller?.sub ?? 0
}

/**
 * Whether a subscriber's filter on `field` may be matched against `row`: a hidden field is matched
 * only on rows the subscriber reads it on, so that the events heard do not tell its value.
 */
export function mayMatchField (rules: FieldRules | undefined, caller: AccessUser | undefined, row: Record<string, unknown>, field: string): boolean {
  const rule = rules?.fields[field]
  return rule === undefined || mayReadField(rule, caller, row[(rules as FieldRules).owner])
}

/**
 * `fields=` with what the field rules need to show a hidden field to its own owner: the owner's
 * column, when `fields` asks a hidden field but not it (nor is it the rows' `key`, always read).
 * `strip` drops that column again from the rows.
 */
export function withOwnerColumn (rules: FieldRules | undefined, fields: string | undefined, key = 'id'): { fields: string | undefined, strip: (rows: readonly Row[]) => void } {
  const asked = fields?.split(',').map((field) => field.trim())
  // The key is always read.
  const needed = rules !== undefined && rules.owner !== key && asked !== undefined && !asked.includes(rules.owner) && asked.some((field) => rules.fields[field] !== undefined)
  if (!needed) return { fields, strip: () => {} }
  return { fields: `${fields ?? ''},${rules.owner}`, strip: (rows) => { for (const row of rows) delete row[rules.owner] } }
}
