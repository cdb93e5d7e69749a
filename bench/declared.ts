// The bench's declared host resources (RESOURCES_MODULE): notes shaped like the users page's rows, so
// that their first page measures what a declaration costs against the built-in users page; entries,
// created with a hook, one at a time and in batches (the bulk-write cases).
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
}, {
  // The bulk-write cases' host resource: a hook on every create (it tidies the address and makes the
  // row's own code), so that a create is a transaction of its own, as a host's with business rules is.
  name: 'entry',
  table: 'bench_entries',
  representation: Type.Object({
    id: Type.Integer(),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    email: Type.String({ maxLength: 254 }),
    code: Type.String(),
    created_at: Type.String({ format: 'date-time' })
  }),
  generated: ['id', 'code', 'created_at'],
  writable: ['name', 'email'],
  auth: { read: 'authenticated' },
  // A batch's rows in one statement once every hook has run: what a host loading data in batches declares.
  bulk: { create: 'inOneStatement' },
  hooks: {
    beforeCreate: ({ values }: { values: Record<string, unknown> }) => ({ ...values, email: String(values.email).trim().toLowerCase(), code: `E-${String(values.name).slice(0, 8).toUpperCase()}` })
  }
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
  },
  '0002_bench_entries': {
    async up (db: Kysely<any>) {
      await db.schema.createTable('bench_entries')
        .addColumn('id', 'serial', (col) => col.primaryKey())
        .addColumn('name', 'text', (col) => col.notNull())
        .addColumn('email', 'text', (col) => col.notNull())
        .addColumn('code', 'text', (col) => col.notNull())
        .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
        .execute()
    }
  }
}
