// A host application's own resource: labels that users make for themselves and that posts carry,
// with every convention of the built-in resources (keyset pages, filters, sort, `fields`, `include`,
// `q`, ETags, Idempotency-Key, the error model, access rules, OpenAPI, GraphQL, subscriptions), and
// rules of its own (a hook that limits each user's labels, an `archive` action), from one declaration
// and one migration.
// Run it with `npx tsx examples/labels.ts` once the package is built (or installed).
import { pathToFileURL } from 'node:url'
import Fastify, { type FastifyInstance } from 'fastify'
import { sql, type Generated, type Kysely, type Migration } from 'kysely'
import { conflict, defineResource, tandem, Type, unprocessable, type Static, type TandemOptions } from 'tandem-api'

/** How many labels one user may have: `beforeCreate` refuses the next with 422. */
export const LABELS_PER_OWNER = 20

/** A label as the API shows it: REST's fields (GraphQL's in camelCase). */
const representation = Type.Object({
  id: Type.Integer(),
  owner_id: Type.Integer(),
  name: Type.String({ minLength: 1, maxLength: 60 }),
  color: Type.Union([Type.String({ pattern: '^#[0-9a-f]{6}$' }), Type.Null()]),
  created_at: Type.String({ format: 'date-time' }),
  archived_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()])
})
/** A label's row: `RowOf<typeof labels>` names the same type. */
export type Label = Static<typeof representation>

export const labels = defineResource({
  name: 'label',
  table: 'labels',
  representation,
  generated: ['id', 'created_at', 'archived_at'],
  owner: 'owner_id',
  writable: ['name', 'color'],
  sort: ['id', 'name', 'created_at'],
  filters: ['name', 'owner_id'],
  search: ['name'],
  relations: {
    owner: { belongsTo: 'user', key: 'owner_id' },
    posts: { manyToMany: 'post', through: 'post_labels', key: 'label_id', otherKey: 'post_id', inverse: 'labels' }
  },
  auth: { read: 'authenticated', create: 'authenticated', update: 'owner', delete: 'ownerOrAdmin' },
  events: ['created', 'updated', 'deleted'],
  hooks: {
    // Runs in the create's transaction. The owner's row is locked first, so two creates of one
    // owner take turns and the second counts the first's label: neither can pass the limit
    // together. (`no key update` still lets rows that refer to the user be written meanwhile.)
    async beforeCreate ({ trx, values }) {
      const owner = Number(values.owner_id)
      await trx.selectFrom('users').select('id').where('id', '=', owner).forNoKeyUpdate().execute()
      const { count } = await trx.withTables<{ labels: Label }>().selectFrom('labels')
        .select((eb) => eb.fn.countAll<string>().as('count')).where('owner_id', '=', owner).executeTakeFirstOrThrow()
      if (Number(count) >= LABELS_PER_OWNER) throw unprocessable(`a user may have at most ${LABELS_PER_OWNER} labels`)
    }
  },
  actions: {
    // POST /labels/{id}/archive and the mutation archiveLabel(id): on the owner's row, locked.
    archive: {
      auth: 'owner',
      summary: 'Archive a label (once)',
      async run ({ trx, row }) {
        if (row.archived_at !== null) throw conflict('already archived')
        return await trx.withTables<{ labels: Label }>().updateTable('labels')
          .set({ archived_at: sql<string>`now()` }).where('id', '=', row.id).returningAll().executeTakeFirstOrThrow()
      }
    }
  }
})

/** The host's migrations: its own tables, recorded apart from Tandem's. */
export const migrations: Record<string, Migration> = {
  '0001_labels': {
    async up (db: Kysely<any>) {
      await db.schema.createTable('labels')
        .addColumn('id', 'serial', (col) => col.primaryKey())
        .addColumn('owner_id', 'integer', (col) => col.notNull().references('users.id').onDelete('cascade'))
        .addColumn('name', 'text', (col) => col.notNull())
        .addColumn('color', 'text')
        .addColumn('created_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
        .addColumn('archived_at', 'timestamptz')
        .addUniqueConstraint('labels_owner_id_name_key', ['owner_id', 'name'])
        .execute()
      // An index for every filter and sort; `q` matches parts of words through a trigram index.
      await db.schema.createIndex('labels_owner_id_idx').on('labels').column('owner_id').execute()
      await db.schema.createIndex('labels_name_id_idx').on('labels').columns(['name', 'id']).execute()
      await db.schema.createIndex('labels_created_at_id_idx').on('labels').columns(['created_at', 'id']).execute()
      await sql`create index labels_name_trgm_idx on labels using gin ((coalesce(name::text, '')) gin_trgm_ops)`.execute(db)
      // Which posts carry which labels: the primary key serves a label's posts, the index a post's labels.
      await db.schema.createTable('post_labels')
        .addColumn('label_id', 'integer', (col) => col.notNull().references('labels.id').onDelete('cascade'))
        .addColumn('post_id', 'integer', (col) => col.notNull().references('posts.id').onDelete('cascade'))
        .addPrimaryKeyConstraint('post_labels_pkey', ['label_id', 'post_id'])
        .execute()
      await db.schema.createIndex('post_labels_post_id_label_id_idx').on('post_labels').columns(['post_id', 'label_id']).execute()
    },
    async down (db: Kysely<any>) {
      await db.schema.dropTable('post_labels').execute()
      await db.schema.dropTable('labels').execute()
    }
  }
}

/** The host's tables as its own queries see them (Kysely's table types). */
export type HostTables = {
  labels: { id: Generated<number>, owner_id: number, name: string, color: string | null, archived_at: Date | null, created_at: Generated<Date> }
  post_labels: { label_id: number, post_id: number }
}

/** Puts a label on a post (labelling twice is harmless): the host's own query, on `app.db` widened to its tables by Kysely's `withTables`. */
export async function labelPost (app: FastifyInstance, labelId: number, postId: number): Promise<void> {
  await app.db.withTables<HostTables>().insertInto('post_labels').values({ label_id: labelId, post_id: postId })
    .onConflict((oc) => oc.doNothing()).execute()
}

export async function buildHost (options: TandemOptions & { logger?: boolean } = {}): Promise<FastifyInstance> {
  const { logger, ...tandemOptions } = options
  const app = Fastify({ logger: logger ?? false, pluginTimeout: 60_000 })
  await app.register(tandem, { ...tandemOptions, resources: [labels], migrations })
  return app
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const app = await buildHost({ databaseUrl: process.env.DATABASE_URL, jwtSecret: process.env.JWT_SECRET, logger: true })
  await app.listen({ port: Number(process.env.PORT ?? 3000) })
}
