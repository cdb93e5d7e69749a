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

export interface Database {
  users: UsersTable
  profiles: ProfilesTable
  posts: PostsTable
  comments: CommentsTable
  products: ProductsTable
  orders: OrdersTable
  order_items: OrderItemsTable
}

export type UserRow = Selectable<UsersTable>
export type NewUser = Insertable<UsersTable>
export type UserUpdate = Updateable<UsersTable>
