import type { BenchCase } from './cases.js'

/**
 * The cases whose req/s the targets compare with one another, in the order they run within a pass;
 * each pass runs them once more in reverse, then the rest once. Neighbours here are the pairs the
 * targets compare: the declared resource's page and the first page sit one apart, then baseline and
 * first page, first and deep page, GraphQL flat beside the deep page (it is judged against the
 * first page, two away), and nested GraphQL beside its one-statement reference, the mirror's centre
 * (nested GraphQL is judged against the baseline too: every case here has the same mean position).
 * The first page read from a replica comes first, three from the first page it is judged against:
 * beside it, it would part pairs the older targets keep neighbours.
 * References and controls explain a target and judge nothing: run once, they keep a full run
 * within its time.
 */
export const MIRRORED = [
  'rest-first-page-replica',
  'rest-declared-first-page',
  'baseline',
  'rest-first-page',
  'rest-deep-keyset',
  'graphql-flat',
  'graphql-nested',
  'baseline-nested'
] as const

/**
 * One pass: the selected mirrored cases as A B C … C B A, then the other cases once, in their order.
 * This machine slows under sustained load (BENCHMARKS.md, 'This machine and its noise'); run one after the other,
 * the later of two compared cases always paid for it. Mirrored, all have the same mean position in
 * time, so a steady drift cancels out of their ratios. The case at the centre runs once: a second
 * run beside the first would move no case's mean position, and cost a run. Write cases are never
 * mirrored: they change the data the reads after them see.
 */
export function passSchedule (selected: readonly BenchCase[]): BenchCase[] {
  const byId = new Map(selected.map((bench) => [bench.id, bench]))
  const mirrored = MIRRORED.flatMap((id) => byId.get(id) ?? [])
  const written = mirrored.find((bench) => bench.writes)
  if (written !== undefined) throw new Error(`${written.id} writes and cannot be measured twice in a pass`)
  const once = selected.filter((bench) => !(MIRRORED as readonly string[]).includes(bench.id))
  return [...mirrored, ...mirrored.slice(0, -1).reverse(), ...once]
}
