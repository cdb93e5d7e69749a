// A host's code under `strict`, type-checked by test/types/host-types.test.ts (never run): its tables
// typed in `HostTables` (one derived from its declaration's representation, one written by hand), so
// that `app.db` and every hook's `trx` know them with no cast; `caller` a user wherever the rule needs
// one; hook `values` typed by the representation. Each `@ts-expect-error` is a mistake the types catch.
import Fastify, { type FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { conflict, defineResource, tandem, Type, type AccessUser, type Db, type TableOf } from 'tandem-api'

const representation = Type.Object({
  id: Type.Integer(),
  owner_id: Type.Integer(),
  name: Type.String({ minLength: 1 }),
  status: Type.Union([Type.Literal('todo'), Type.Literal('done')]),
  created_at: Type.String({ format: 'date-time' })
})

declare module 'tandem-api' {
  interface HostTables {
    /** From the declaration's representation, its generated fields optional in an insert. */
    tasks: TableOf<typeof representation, 'id' | 'created_at'>
    /** Written by hand, as a Kysely `Database` interface has it. */
    task_watchers: { task_id: number, user_id: number }
  }
}

export const tasks = defineResource({
  name: 'task',
  table: 'tasks',
  representation,
  generated: ['id', 'created_at'],
  owner: 'owner_id',
  writable: ['name', 'status'],
  hooks: {
    async beforeCreate ({ trx, caller, values }) {
      // Creates are `authenticated` (the default): there is always a caller.
      const owner: AccessUser = caller
      const status: 'todo' | 'done' | undefined = values.status
      // @ts-expect-error a name is text
      const wrong: number | undefined = values.name
      const open = await trx.selectFrom('tasks').select((eb) => eb.fn.countAll<string>().as('count'))
        .where('owner_id', '=', owner.sub).where('status', '=', 'todo').executeTakeFirstOrThrow()
      // @ts-expect-error no table of that name
      trx.selectFrom('task')
      // @ts-expect-error no column of that name
      trx.selectFrom('tasks').select('title')
      // @ts-expect-error a status is todo or done
      trx.updateTable('tasks').set({ status: 'later' })
      return { ...values, name: `${values.name ?? ''} (${open.count} open)`, wrong, status }
    },
    async afterCreate ({ trx, row }) {
      await trx.insertInto('task_watchers').values({ task_id: row.id, user_id: row.owner_id }).execute()
    },
    async beforeUpdate ({ caller, current }) {
      // Changes are never public.
      const changer: AccessUser = caller
      if (current.status === 'done' && changer.role !== 'admin') throw conflict('a done task is changed by an administrator')
    },
    async beforeDelete ({ trx, caller, current }) {
      await trx.deleteFrom('task_watchers').where('task_id', '=', current.id).where('user_id', '=', caller.sub).execute()
    }
  },
  actions: {
    finish: {
      auth: 'owner',
      async run ({ trx, caller, row }) {
        const finisher: AccessUser = caller
        return await trx.updateTable('tasks').set({ status: 'done' }).where('id', '=', row.id).where('owner_id', '=', finisher.sub)
          .returningAll().executeTakeFirstOrThrow()
      }
    }
  }
})

// A sign-up list anyone may join: its create's caller may be no one.
export const waitlist = defineResource({
  name: 'signup',
  table: 'signups',
  representation: Type.Object({ id: Type.Integer(), email: Type.String() }),
  generated: ['id'],
  writable: ['email'],
  auth: { read: 'admin', create: 'public' },
  hooks: {
    beforeCreate ({ caller }) {
      // @ts-expect-error a public create may have no caller
      const user: AccessUser = caller
      return { user }
    },
    beforeUpdate ({ caller }) {
      const admin: AccessUser = caller
      return { admin }
    }
  }
})

/** The host's own query, on its own tables, through `app.db` and a function taking `Db`. */
async function watch (db: Db, taskId: number, userId: number): Promise<void> {
  await db.insertInto('task_watchers').values({ task_id: taskId, user_id: userId }).onConflict((oc) => oc.doNothing()).execute()
  // @ts-expect-error an id is a number
  await db.insertInto('task_watchers').values({ task_id: 'one', user_id: userId }).execute()
  // Tandem's tables are still there.
  await db.selectFrom('users').select('email').where('id', '=', userId).execute()
  await sql`select 1`.execute(db)
}

export async function buildHost (): Promise<FastifyInstance> {
  const app = Fastify()
  await app.register(tandem, { resources: [tasks, waitlist] })
  const task = await app.db.insertInto('tasks').values({ owner_id: 1, name: 'Write', status: 'todo' }).returningAll().executeTakeFirstOrThrow()
  const name: string = task.name
  await watch(app.db, task.id, 1)
  app.log.info(name)
  return app
}
