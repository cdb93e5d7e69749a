// Who owns a row, as one SQL predicate: the owner rules of a declaration (`owner: ['assignee_id',
// 'project.owner_id', 'watchers']`) resolved to the columns and tables they look at
// (schema/owners.ts), written once here for every statement that narrows or checks by them.
import { sql, type RawBuilder } from 'kysely'

/**
 * One way a row is its owner's:
 * - `column`: the row's own column names the user (`assignee_id`);
 * - `parent`: the row's `key` names a row of `table` (by `targetKey`) whose `column` names the user
 *   (`project.owner_id`: the project's owner);
 * - `member`: the join table `through` links the row (its `key` names the row's `by`) to the user
 *   (`otherKey`), or, with `target`, to a row of that table whose `column` names the user.
 */
export type OwnerPath =
  | { readonly kind: 'column', readonly column: string }
  | { readonly kind: 'parent', readonly key: string, readonly table: string, readonly targetKey: string, readonly column: string }
  | {
    readonly kind: 'member'
    readonly through: string
    readonly key: string
    readonly by: string
    readonly otherKey: string
    readonly target?: { readonly table: string, readonly key: string, readonly column: string }
  }

/** The ways a row is its owner's: any of them (an OR). */
export type OwnerRule = readonly OwnerPath[]

/** Whether `rule` is answered by the row's own columns alone (no statement needed to tell). */
export const ownedInRow = (rule: OwnerRule): boolean => rule.every((path) => path.kind === 'column')

/** The text a statement's shape knows a rule by: everything its SQL is written from. */
export function ownerShape (rule: OwnerRule): string {
  return rule.map((path) => {
    if (path.kind === 'column') return path.column
    if (path.kind === 'parent') return `${path.key}>${path.table}.${path.targetKey}.${path.column}`
    const target = path.target === undefined ? '' : `>${path.target.table}.${path.target.key}.${path.target.column}`
    return `${path.by}<${path.through}.${path.key}.${path.otherKey}${target}`
  }).join('|')
}

// The alias of the rows a path's subquery reads: a name no table of the API's statements has.
const OTHER = 'tandem_owner'
const LINK = 'tandem_owner_link'

/**
 * The condition that `user` (a parameter, or a statement's slot for it) owns the row: one `exists
 * (select 1 …)` per path through a relation (served by the target's key, or the join table's key
 * and other key: index them), or-ed with the row's own columns. `row` qualifies the row's columns
 * (an alias, or the table's name; left out: unqualified, which a rule of columns alone may be).
 * `lock`: the rows a path reads are share-locked until the commit (the check of a write on its locked
 * row: a parent's new owner waits for the write, or, committed first, is what the check sees).
 */
export function ownedBy (rule: OwnerRule, row: string | undefined, user: unknown, lock = false): RawBuilder<boolean> {
  const own = (column: string) => sql.ref(row === undefined ? column : `${row}.${column}`)
  const locked = lock ? sql` for share` : sql``
  const conditions = rule.map((path): RawBuilder<boolean> => {
    if (path.kind === 'column') return sql<boolean>`${own(path.column)} = ${user}`
    if (path.kind === 'parent') {
      return sql<boolean>`exists (select 1 from ${sql.table(path.table)} as ${sql.id(OTHER)} where ${sql.ref(`${OTHER}.${path.targetKey}`)} = ${own(path.key)} and ${sql.ref(`${OTHER}.${path.column}`)} = ${user}${locked})`
    }
    const { target } = path
    if (target === undefined) {
      return sql<boolean>`exists (select 1 from ${sql.table(path.through)} as ${sql.id(LINK)} where ${sql.ref(`${LINK}.${path.key}`)} = ${own(path.by)} and ${sql.ref(`${LINK}.${path.otherKey}`)} = ${user}${locked})`
    }
    return sql<boolean>`exists (select 1 from ${sql.table(path.through)} as ${sql.id(LINK)} join ${sql.table(target.table)} as ${sql.id(OTHER)} on ${sql.ref(`${OTHER}.${target.key}`)} = ${sql.ref(`${LINK}.${path.otherKey}`)} where ${sql.ref(`${LINK}.${path.key}`)} = ${own(path.by)} and ${sql.ref(`${OTHER}.${target.column}`)} = ${user}${locked})`
  })
  if (conditions.length === 1) return conditions[0] as RawBuilder<boolean>
  return sql<boolean>`(${sql.join(conditions, sql` or `)})`
}
