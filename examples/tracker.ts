// A second host application: a project tracker whose tables look like real ones. Projects and tasks
// are named by uuids the database makes; a task's status is an enum and its due date a day that may be
// missing, which lists sort by (NULLs last ascending, first descending, in both styles and through
// cursors); and a task belongs to its assignee AND to its project's owner: an owner rule that looks
// through a relation, declared rather than written in hooks. Two declarations and one migration.
// Run it with `npx tsx examples/tracker.ts` once the package is built (or installed).
import { pathToFileURL } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import { sql, type Kysely, type Migration } from 'kysely'
import { defineResource, tandem, Type, type Static, type TandemOptions } from 'tandem-api'

/** A project: its key a uuid (`Type.String({ format: 'uuid' })`), its owner the user who made it. */
const project = Type.Object({
  id: Type.String({ format: 'uuid' }),
  owner_id: Type.Integer(),
  name: Type.String({ minLength: 1, maxLength: 80 }),
  created_at: Type.String({ format: 'date-time' })
})
export type Project = Static<typeof project>

export const projects = defineResource({
  name: 'project',
  table: 'projects',
  representation: project,
  generated: ['id', 'created_at'],
  owner: 'owner_id',
  writable: ['name'],
  sort: ['name', 'created_at'],
  relations: { owner: { belongsTo: 'user', key: 'owner_id', inverse: 'projects' } },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' }
})

/** A task: a GraphQL enum `TaskStatus`, a `Date` that may be null, and two owners. */
const task = Type.Object({
  id: Type.String({ format: 'uuid' }),
  project_id: Type.String({ format: 'uuid' }),
  assignee_id: Type.Integer(),
  title: Type.String({ minLength: 1, maxLength: 200 }),
  status: Type.Union([Type.Literal('todo'), Type.Literal('doing'), Type.Literal('done')], { default: 'todo' }),
  due_on: Type.Union([Type.String({ format: 'date' }), Type.Null()]),
  created_at: Type.String({ format: 'date-time' })
})
export type Task = Static<typeof task>

export const tasks = defineResource({
  name: 'task',
  table: 'tasks',
  representation: task,
  generated: ['id', 'created_at'],
  // Whoever files a task is its assignee; the project's owner may change it too.
  owner: ['assignee_id', 'project.owner_id'],
  writable: ['project_id', 'title', 'status', 'due_on'],
  sort: ['due_on', 'created_at'],
  filters: ['status', 'project_id', 'due_on'],
  relations: {
    // GET /projects/{id}/tasks is the tasks' own list of one project's tasks.
    project: { belongsTo: 'project', key: 'project_id', required: true, under: 'also' },
    assignee: { belongsTo: 'user', key: 'assignee_id', required: true }
  },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'owner' },
  events: ['created', 'updated']
})

/** The host's migrations: uuids made by the database, an index for each filter and sort. */
export const migrations: Record<string, Migration> = {
  '0001_tracker': {
    async up (db: Kysely<any>) {
      await sql`create table projects (
        id uuid primary key default gen_random_uuid(),
        owner_id integer not null references users (id) on delete cascade,
        name text not null,
        created_at timestamptz not null default now())`.execute(db)
      await sql`create index projects_owner_id_id_idx on projects (owner_id, id)`.execute(db)
      await sql`create table tasks (
        id uuid primary key default gen_random_uuid(),
        project_id uuid not null references projects (id) on delete cascade,
        assignee_id integer not null references users (id) on delete cascade,
        title text not null,
        status text not null default 'todo' check (status in ('todo', 'doing', 'done')),
        due_on date,
        created_at timestamptz not null default now())`.execute(db)
      for (const column of ['project_id', 'assignee_id', 'status', 'due_on', 'created_at']) {
        await sql`create index ${sql.id(`tasks_${column}_id_idx`)} on tasks (${sql.id(column)}, id)`.execute(db)
      }
    },
    async down (db: Kysely<any>) {
      await sql`drop table tasks`.execute(db)
      await sql`drop table projects`.execute(db)
    }
  }
}

/** The tracker as a host serves it: Tandem with its two resources and their migrations. */
export async function buildTracker (options: TandemOptions & { logger?: boolean } = {}): Promise<FastifyInstance> {
  const { logger, ...tandemOptions } = options
  const app = Fastify({ logger: logger ?? false, pluginTimeout: 60_000 })
  await app.register(tandem, { ...tandemOptions, resources: [projects, tasks], migrations })
  return app
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const app = await buildTracker({ databaseUrl: process.env.DATABASE_URL, jwtSecret: process.env.JWT_SECRET, logger: true })
  await app.listen({ port: Number(process.env.PORT ?? 3000) })
}
