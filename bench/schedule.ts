import type { BenchCase } from './cases.js'

/**
 * The cases whose req/s are compared with one another (the targets' ratios and the references'),
 * in the order they run within a pass; each pass runs them once more in reverse, then the rest.
 * Neighbours here are the pairs the targets compare: baseline and first page, first and deep page
 * (the declared resource's page sits one away from the first page);
 * then the deep page and its controls: the second page (a cursor at the other end of the list) and
 * the first page with the deep page's widths.
 */
export const MIRRORED = [
  'floor-first-page-limited',
  'floor-first-page-jwt',
  'floor-first-page',
  'rest-declared-first-page',
  'baseline',
  'rest-first-page',
  'rest-deep-keyset',
  'rest-second-page',
  'rest-first-page-desc',
  'graphql-flat'
] as const

/**
 * One pass: the selected mirrored cases as A B C … C B A, then the other cases once, in their order.
 * This machine slows under sustained load (BENCHMARKS.md, 'This machine and its noise'); run one after the other,
 * the later of two compared cases always paid for it. Mirrored, both have the same mean position in
 * time, so a steady drift cancels out of their ratio. Write cases are never mirrored: they change
 * the data the reads after them see.
 */
export function passSchedule (selected: readonly BenchCase[]): BenchCase[] {
  const byId = new Map(selected.map((bench) => [bench.id, bench]))
  const mirrored = MIRRORED.flatMap((id) => byId.get(id) ?? [])
  const written = mirrored.find((bench) => bench.writes)
  if (written !== undefined) throw new Error(`${written.id} writes and cannot be measured twice in a pass`)
  const once = selected.filter((bench) => !(MIRRORED as readonly string[]).includes(bench.id))
  // A single mirrored case gains nothing from a second run.
  const twice = mirrored.length > 1 ? [...mirrored, ...[...mirrored].reverse()] : mirrored
  return [...twice, ...once]
}
