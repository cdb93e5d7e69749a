import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely'

/** A server-set timestamp: read as a Date, never written by the API. */
type CreatedAt = ColumnType<Date, never, never>
type UpdatedAt = ColumnType<Date, never, Date | string>
/** Identity columns: PostgreSQL generates them, normalized to JS numbers on read. */
type Id = Generated<number>

export interface UsersTable {
  id: Id
  name: string
  email: string
  password_hash: string | null
  role: Generated<'user' | 'admin'>
  email_verified_at: Date | null
  /** Raised to end every access token issued before (they carry the version they were issued with). */
  token_version: Generated<number>
  created_at: CreatedAt
}

export interface ProfilesTable {
  user_id: number
  bio: string | null
  avatar_url: string | null
  location: string | null
  updated_at: UpdatedAt
}

export interface PostsTable {
  id: Id
  author_id: number
  title: string
  content: string
  created_at: CreatedAt
  updated_at: UpdatedAt
}

export interface CommentsTable {
  id: Id
  post_id: number
  author_id: number
  text: string
  created_at: CreatedAt
}

export interface ProductsTable {
  id: Id
  name: string
  description: string | null
  category: string
  price: number
  stock: number
  created_at: CreatedAt
}

export type OrderStatus = 'pending' | 'paid' | 'shipped' | 'cancelled'

export interface OrdersTable {
  id: Id
  user_id: number
  status: Generated<OrderStatus>
  total: number
  created_at: CreatedAt
}

export interface OrderItemsTable {
  order_id: number
  product_id: number
  quantity: number
  unit_price: number
}

export interface RevokedTokensTable {
  /** A token's id, or `user:<id>` for every token of that user below `token_version`. */
  jti: string
  expires_at: Date
  revoked_at: ColumnType<Date, never, Date>
  /** On `user:<id>` rows: that user's tokens of a lower version are revoked. */
  token_version: number | null
}

/** One row: the longest access-token lifetime an instance is configured with (a role change's trigger reads it). */
export interface TokenLifetimeTable {
  one_row: Generated<boolean>
  seconds: number
}

export type UserTokenKind = 'verify_email' | 'reset_password'

export interface UserTokensTable {
  token_hash: string
  user_id: number
  kind: UserTokenKind
  /** The address the token was sent to: verifying it only counts while the user still has it. */
  email: string
  expires_at: Date
  used_at: Date | null
  created_at: CreatedAt
}

export interface EmailOutboxTable {
  id: Id
  /** The user it was written for; the row goes with them. */
  user_id: number | null
  recipient: string
  kind: string
  subject: string
  /** The text; a one-time token appears only as `{{token}}`. */
  body: string
  /** The one-time token the body stands for, sealed (see `openOutboxMessage`), or null. */
  sealed_token: string | null
  /** After this the message is useless (its token has expired) and is deleted. */
  expires_at: Date
  created_at: CreatedAt
  sent_at: Date | null
}

/** GraphQL documents of automatic persisted queries, by the hex SHA-256 of their text. */
export interface PersistedQueriesTable {
  sha256: string
  query: string
  /** Learnt from a client (automatic persisted queries), not registered by the application. */
  learnt: Generated<boolean>
  used_at: ColumnType<Date, never, Date>
  created_at: CreatedAt
}

export interface IdempotencyKeysTable {
  scope: string
  key: string
  request_hash: string
  status_code: number | null
  /** jsonb: written as JSON text, read back parsed. */
  headers: ColumnType<Record<string, string> | null, string | null, string | null>
  body: string | null
  created_at: CreatedAt
}

/** A failed sign-in: the address it tried (lowercased) and when. */
export interface LoginFailuresTable {
  id: Id
  email: string
  failed_at: CreatedAt
}

export interface LoginFailuresByDeviceTable {
  id: Id
  /** The sha256 (hex) of the device token's nonce. */
  device: string
  failed_at: CreatedAt
}

/**
 * The host's own tables as its queries see them (Kysely table types, by table name): empty in Tandem;
 * a host adds its tables by module augmentation, and `app.db`, each hook's and action's `trx` and a
 * `prepare` hook's `db` know them, with no cast nor `withTables`. A table named here is typed as said
 * here, also in the hooks of the resource that declares it (which otherwise derive it from the
 * representation): say here what the representation cannot (a `timestamptz` read as a `Date`).
 * @example
 * import type { Generated } from 'kysely'
 * declare module 'tandem-api' {
 *   interface HostTables {
 *     labels: { id: Generated<number>, owner_id: number, name: string, color: string | null, created_at: Generated<Date> }
 *     post_labels: { label_id: number, post_id: number }
 *   }
 * }
 */
// Empty until a host augments it: an interface, so that a host's declarations merge into it.
export interface HostTables {}

/** Every table a query may name: Tandem's (`Database`) and the host's (`HostTables`). */
export type TandemDatabase = Database & HostTables

export interface Database {
  users: UsersTable
  profiles: ProfilesTable
  posts: PostsTable
  comments: CommentsTable
  products: ProductsTable
  orders: OrdersTable
  order_items: OrderItemsTable
  revoked_tokens: RevokedTokensTable
  user_tokens: UserTokensTable
  email_outbox: EmailOutboxTable
  persisted_queries: PersistedQueriesTable
  idempotency_keys: IdempotencyKeysTable
  login_failures: LoginFailuresTable
  login_failures_by_device: LoginFailuresByDeviceTable
  token_lifetime: TokenLifetimeTable
}

export type UserRow = Selectable<UsersTable>
export type NewUser = Insertable<UsersTable>
export type UserUpdate = Updateable<UsersTable>
