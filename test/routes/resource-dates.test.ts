// Dates and times are exact whatever the server's time zone (issue 40, 6): a `date` column is the
// same calendar day in both styles, a `timestamp` the same wall-clock time, and GraphQL answers both as
// ISO-8601 strings, never epoch numbers. The checks run with the process in a zone west of UTC and one
// east of it (the suite's helpers set UTC; Node reads TZ again whenever it is set), on PGlite and, with
// DATABASE_URL, on a real PostgreSQL server.
import { sql, type Kysely } from 'kysely'
import t from 'tap'
import { defineResource, resourceSdl, Type } from '../../index.js'
import { apiClient, body, build, errorCodes, graphql, signedIn } from '../helpers/app.js'

const meetings = defineResource({
  name: 'meeting',
  table: 'meetings',
  representation: Type.Object({
    id: Type.Integer(),
    owner_id: Type.Integer(),
    title: Type.String({ minLength: 1 }),
    due_on: Type.Union([Type.String({ format: 'date' }), Type.Null()]),
    local_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    created_at: Type.String({ format: 'date-time' })
  }),
  generated: ['id', 'created_at'],
  owner: 'owner_id',
  writable: ['title', 'due_on', 'local_at'],
  sort: ['due_on'],
  filters: ['due_on'],
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' }
})

const migrations = {
  '0001_meetings': {
    async up (db: Kysely<any>) {
      await sql`create table meetings (
        id serial primary key,
        owner_id integer not null references users (id) on delete cascade,
        title text not null,
        due_on date,
        local_at timestamp,
        created_at timestamptz not null default now())`.execute(db)
      await sql`create index meetings_due_on on meetings (due_on, id)`.execute(db)
    }
  }
}

t.test('the GraphQL type gives a date field the Date scalar, a date-time DateTime', async (t) => {
  t.match(resourceSdl([meetings]), /dueOn: Date\b/)
  t.match(resourceSdl([meetings]), /localAt: DateTime\b/)
})

for (const zone of ['America/New_York', 'Asia/Tokyo']) {
  t.test(`dates under TZ=${zone}: the same day and time in both styles`, async (t) => {
    const app = await build(t, { resources: [meetings], migrations })
    process.env.TZ = zone
    t.teardown(() => { process.env.TZ = 'UTC' })
    t.equal(new Date(2027, 1, 20).getTimezoneOffset() === 0, false, 'the process runs away from UTC')
    const ann = await signedIn(app, { name: 'Ann' })
    const asAnn = apiClient(app, ann.headers)

    const made = await asAnn('POST', '/meetings', { title: 'late', due_on: '2027-02-20', local_at: '2027-02-20T23:30:00.000Z' })
    t.equal(made.statusCode, 201)
    const meeting = body<{ id: number, due_on: string, local_at: string, created_at: string }>(made)
    t.same([meeting.due_on, meeting.local_at], ['2027-02-20', '2027-02-20T23:30:00.000Z'], 'the create answers the day and the time written')
    t.same((await sql<{ due_on: string, local_at: string }>`select due_on::text, local_at::text from meetings`.execute(app.db)).rows,
      [{ due_on: '2027-02-20', local_at: '2027-02-20 23:30:00' }], 'stored as written')
    const read = body<{ due_on: string, local_at: string }>(await asAnn('GET', `/meetings/${meeting.id}`))
    t.same([read.due_on, read.local_at], ['2027-02-20', '2027-02-20T23:30:00.000Z'], 'a read too')
    const listed = body<{ data: Array<{ due_on: string }> }>(await asAnn('GET', '/meetings?due_on=2027-02-20'))
    t.same(listed.data.map(({ due_on: day }) => day), ['2027-02-20'], 'a list filtered by the day')
    t.equal((await asAnn('PATCH', `/meetings/${meeting.id}`, { title: 'later' })).statusCode, 200)
    t.same(body(await asAnn('GET', `/meetings/${meeting.id}`)).due_on, '2027-02-20', 'a change of another field keeps the day')

    await asAnn('POST', '/meetings', { title: 'early', due_on: '2027-01-01' })
    await asAnn('POST', '/meetings', { title: 'none' })
    const first = body<{ data: Array<{ due_on: string | null }>, pagination: { nextCursor: string } }>(await asAnn('GET', '/meetings?sort=due_on&limit=1'))
    const next = body<{ data: Array<{ due_on: string | null }> }>(await asAnn('GET', `/meetings?sort=due_on&limit=5&cursor=${first.pagination.nextCursor}`))
    t.same([...first.data, ...next.data].map(({ due_on: day }) => day), ['2027-01-01', '2027-02-20', null], 'sorted by day, paged through the null')

    const answer = await graphql(app, `{ meeting(id: "${meeting.id}") { dueOn localAt createdAt } meetings(dueOn: "2027-02-20") { dueOn } }`, { headers: ann.headers })
    t.same(answer.data?.meeting.dueOn, '2027-02-20', 'GraphQL: the day as an ISO-8601 date, not epoch milliseconds')
    t.same(answer.data?.meeting.localAt, '2027-02-20T23:30:00.000Z', 'a timestamp as an ISO-8601 date-time')
    t.equal(answer.data?.meeting.createdAt, meeting.created_at, 'a timestamptz as REST has it')
    t.same(answer.data?.meetings, [{ dueOn: '2027-02-20' }], 'a Date filter argument')
    const created = await graphql(app, 'mutation { createMeeting(input: {title: "g", dueOn: "2027-03-01", localAt: "2027-03-01T00:15:00Z"}) { dueOn localAt } }', { headers: ann.headers })
    t.same(created.errors, undefined)
    t.same(created.data, { createMeeting: { dueOn: '2027-03-01', localAt: '2027-03-01T00:15:00.000Z' } }, 'a create in GraphQL')
    const wrong = await graphql(app, 'mutation { createMeeting(input: {title: "g", dueOn: "2027-02-30"}) { id } }', { headers: ann.headers })
    t.same(errorCodes(wrong).length, 1, 'a day that does not exist is refused')
    t.notOk(JSON.stringify(wrong).includes('2027-02-30'), 'without echoing it')
  })
}
