// The bench's declared host resource (RESOURCES_MODULE): notes shaped like the users page's rows, so
// that its first page measures what a declaration costs against the built-in users page.
import { Type } from '@sinclair/typebox'
import { sql, type Kysely } from 'kysely'

export const resources = [{
  name: 'note',
  table: 'bench_notes',
  representation: Type.Object({
    id: Type.Integer(),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    email: Type.String({ maxLength: 254 }),
    created_at: Type.String({ format: 'date-time' })
  }),
  generated: ['id', 'created_at'],
  writable: ['name', 'email'],
  auth: { read: 'authenticated' }
}]

// The bench database is kept between runs, and a migration that ran is not run again: a change to
// this table needs a migration of a new name.
export const migrations = {
  '0001_bench_notes': {
    async up (db: Kysely<any>) {
      await db.schema.createTable('bench_notes')
        .addColumn('id', 'serial', (col) => col.primaryKey())
        .addColumn('name', 'text', (col) => col.notNull())
        .addColumn('email', 'text', (col) => col.notNull())
        .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
        .execute()
      await sql`insert into bench_notes (name, email) select 'Note ' || n, 'note' || n || '@example.com' from generate_series(1, 10000) n`.execute(db)
    }
  }
}
