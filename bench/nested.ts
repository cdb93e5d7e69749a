// The baseline's second answer (bench/baseline.ts, `POST /graphql`): the nested GraphQL case's whole
// JSON answer (GRAPHQL_NESTED in bench/cases.ts) built by PostgreSQL in ONE statement, sent as it
// comes. It is what a hand-written server gets from the database alone, so the API's nested query is
// judged against it as well as against the first page. test/bench/nested.test.ts checks that it
// answers what the API answers, on the same data, in one statement.
import { GRAPHQL_NESTED } from './cases.js'

// The limits of GRAPHQL_NESTED, and for comments, asked without one, the API's default
// (DEFAULT_LIST_SIZE of graphql/limits.ts, not imported: this server loads no GraphQL; the test's
// post of 23 comments notices a change).
const USERS = 20
const POSTS = 5
const COMMENTS = 20

/** A JSON array of the `v` of `rows`, an ordered and limited subquery, in its order. */
const list = (rows: string) => `(select '[' || coalesce(string_agg(x.v, ','), '') || ']' from (${rows}) as x)`

/**
 * Objects are concatenated from `to_json` of their values, lists are `string_agg` of an ordered,
 * limited subquery (an index lookup on (key, id) per parent, whose order `string_agg` keeps): the
 * cheapest JSON text PostgreSQL writes, as the API's own nested statement does (`json_agg` and
 * `json_build_object` build values only to print them: PERFORMANCE-DECISIONS.md, 'All relations
 * below a root in one JSON statement'). The API's order throughout: users, each user's posts and
 * each post's comments by id. Every limit is a literal, so the prepared statement is planned once.
 */
export const NESTED_STATEMENT = `select '{"data":{"users":' || ${list(`
  select '{"posts":' || ${list(`
    select '{"comments":' || ${list(`
      select '{"text":' || to_json(comment.text)::text || ',"author":' || coalesce(
        (select '{"name":' || to_json(author.name)::text || '}' from users as author where author.id = comment.author_id),
        'null') || '}' as v
      from comments as comment where comment.post_id = post.id order by comment.id limit ${COMMENTS}`)} || '}' as v
    from posts as post where post.author_id = u.id order by post.id limit ${POSTS}`)} || '}' as v
  from users as u order by u.id limit ${USERS}`)} || '}}' as body`

/** What the answer needs of a `pg` pool (a test counts the statements sent through it). */
export interface Queryable {
  query: (config: { name: string, text: string }) => Promise<{ rows: Array<{ body: string }> }>
}

/** The nested query's answer, `{"data":{"users":[…]}}`, as JSON text: one named prepared statement. */
export async function nestedAnswer (pool: Queryable, statementName: string): Promise<string> {
  const { rows } = await pool.query({ name: statementName, text: NESTED_STATEMENT })
  // Its FROM-less select answers one row.
  const [row] = rows
  if (row === undefined) throw new Error('the nested statement answered no row')
  return row.body
}

/**
 * The request's body parsed as the API's is, but only to check that it asks the one query this
 * answer is for, so that the reference pays for reading and parsing what it is sent.
 */
export function asksNested (body: string): boolean {
  try {
    return (JSON.parse(body) as { query?: unknown }).query === GRAPHQL_NESTED
  } catch {
    return false
  }
}
