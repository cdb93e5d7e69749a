import { sql, type ColumnDefinitionBuilder, type Kysely } from 'kysely'

// Timestamps keep millisecond precision so that a JS Date round-trips exactly through a cursor.
const timestamp = sql`timestamptz(3)`
const id = (col: ColumnDefinitionBuilder) => col.primaryKey().generatedAlwaysAsIdentity()

export async function up (db: Kysely<any>): Promise<void> {
  await sql`create extension if not exists pg_trgm`.execute(db)

  await db.schema.createTable('users')
    .addColumn('id', 'bigint', id)
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('password_hash', 'text')
    .addColumn('role', 'text', (c) => c.notNull().defaultTo('user').check(sql`role in ('user', 'admin')`))
    .addColumn('email_verified_at', timestamp)
    .addColumn('created_at', timestamp, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await sql`create unique index users_email_key on users (lower(email))`.execute(db)
  await db.schema.createIndex('users_name_id_idx').on('users').columns(['name', 'id']).execute()
  await db.schema.createIndex('users_created_at_id_idx').on('users').columns(['created_at', 'id']).execute()
  await sql`create index users_search_idx on users using gin ((name || ' ' || email) gin_trgm_ops)`.execute(db)

  await db.schema.createTable('profiles')
    .addColumn('user_id', 'bigint', (c) => c.primaryKey().references('users.id').onDelete('cascade'))
    .addColumn('bio', 'text')
    .addColumn('avatar_url', 'text')
    .addColumn('location', 'text')
    .addColumn('updated_at', timestamp, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()

  await db.schema.createTable('posts')
    .addColumn('id', 'bigint', id)
    .addColumn('author_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('title', 'text', (c) => c.notNull())
    .addColumn('content', 'text', (c) => c.notNull())
    .addColumn('created_at', timestamp, (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', timestamp, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('posts_author_id_id_idx').on('posts').columns(['author_id', 'id']).execute()
  await db.schema.createIndex('posts_created_at_id_idx').on('posts').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('posts_title_id_idx').on('posts').columns(['title', 'id']).execute()
  await sql`create index posts_search_idx on posts using gin ((title || ' ' || content) gin_trgm_ops)`.execute(db)

  await db.schema.createTable('comments')
    .addColumn('id', 'bigint', id)
    .addColumn('post_id', 'bigint', (c) => c.notNull().references('posts.id').onDelete('cascade'))
    .addColumn('author_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('text', 'text', (c) => c.notNull())
    .addColumn('created_at', timestamp, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('comments_post_id_id_idx').on('comments').columns(['post_id', 'id']).execute()
  await db.schema.createIndex('comments_author_id_idx').on('comments').column('author_id').execute()

  await db.schema.createTable('products')
    .addColumn('id', 'bigint', id)
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('category', 'text', (c) => c.notNull())
    .addColumn('price', sql`numeric(12, 2)`, (c) => c.notNull().check(sql`price >= 0`))
    .addColumn('stock', 'integer', (c) => c.notNull().defaultTo(0).check(sql`stock >= 0`))
    .addColumn('created_at', timestamp, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('products_category_id_idx').on('products').columns(['category', 'id']).execute()
  await db.schema.createIndex('products_price_id_idx').on('products').columns(['price', 'id']).execute()
  await db.schema.createIndex('products_name_id_idx').on('products').columns(['name', 'id']).execute()
  await db.schema.createIndex('products_created_at_id_idx').on('products').columns(['created_at', 'id']).execute()
  await sql`create index products_search_idx on products using gin ((name || ' ' || coalesce(description, '')) gin_trgm_ops)`.execute(db)

  await db.schema.createTable('orders')
    .addColumn('id', 'bigint', id)
    .addColumn('user_id', 'bigint', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('status', 'text', (c) => c.notNull().defaultTo('pending')
      .check(sql`status in ('pending', 'paid', 'shipped', 'cancelled')`))
    .addColumn('total', sql`numeric(12, 2)`, (c) => c.notNull())
    .addColumn('created_at', timestamp, (c) => c.notNull().defaultTo(sql`now()`))
    .execute()
  await db.schema.createIndex('orders_user_id_id_idx').on('orders').columns(['user_id', 'id']).execute()
  await db.schema.createIndex('orders_status_id_idx').on('orders').columns(['status', 'id']).execute()
  await db.schema.createIndex('orders_created_at_id_idx').on('orders').columns(['created_at', 'id']).execute()
  await db.schema.createIndex('orders_total_id_idx').on('orders').columns(['total', 'id']).execute()

  await db.schema.createTable('order_items')
    .addColumn('order_id', 'bigint', (c) => c.notNull().references('orders.id').onDelete('cascade'))
    .addColumn('product_id', 'bigint', (c) => c.notNull().references('products.id').onDelete('restrict'))
    .addColumn('quantity', 'integer', (c) => c.notNull().check(sql`quantity > 0`))
    .addColumn('unit_price', sql`numeric(12, 2)`, (c) => c.notNull())
    .addPrimaryKeyConstraint('order_items_pkey', ['order_id', 'product_id'])
    .execute()
  await db.schema.createIndex('order_items_product_id_idx').on('order_items').column('product_id').execute()
}

export async function down (db: Kysely<any>): Promise<void> {
  for (const table of ['order_items', 'orders', 'products', 'comments', 'posts', 'profiles', 'users']) {
    await db.schema.dropTable(table).ifExists().execute()
  }
}
