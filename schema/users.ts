import { Type, type Static } from '@sinclair/typebox'
import { Email, Id, ListOf, ListQuery, Selectable, Timestamp } from './common.js'
import type { FieldRules } from './resource.js'

const Name = Type.String({ minLength: 1, maxLength: 200 })
// `writeOnly`: never answered, and never part of an Idempotency-Key's fingerprint (plugins/idempotency.ts).
export const Password = Type.String({ minLength: 8, maxLength: 1024, writeOnly: true, description: 'At least 8 characters.' })

/**
 * The users' field rules (as `defineResource`'s `fields` says them, until users are declared): an
 * email is read by its user and administrators, null for everyone else. Users are their own owners.
 */
export const userFieldRules: FieldRules = Object.freeze({ owner: 'id', fields: Object.freeze({ email: 'ownerOrAdmin' }) })

/** An email as answers show it: null for callers other than its user and administrators. */
const ShownEmail = Type.Union([Email, Type.Null()], { description: 'Read by the user and administrators only; null for everyone else.' })

export const User = Type.Object({
  id: Id,
  name: Name,
  email: ShownEmail,
  created_at: Timestamp
}, { additionalProperties: false })

/** A user as lists and `fields=` return it: everything but `id` may be left out on request. */
export const UserFields = Selectable({ name: Name, email: ShownEmail, created_at: Timestamp })

export const CreateUserBody = Type.Object({
  name: Name,
  email: Email,
  password: Type.Optional(Password)
}, { additionalProperties: false })
export type CreateUserBodyType = Static<typeof CreateUserBody>

/** The password of the caller, needed when users change their own email. */
const CurrentPassword = Type.String({ minLength: 1, maxLength: 1024, writeOnly: true, description: 'Your current password: needed to change your own email.' })

export const ReplaceUserBody = Type.Object({ name: Name, email: Email, current_password: Type.Optional(CurrentPassword) }, { additionalProperties: false })
export type ReplaceUserBodyType = Static<typeof ReplaceUserBody>

export const PatchUserBody = Type.Partial(ReplaceUserBody, { additionalProperties: false })

export const userSortable = ['id', 'name', 'created_at'] as const

export const UserListQuery = ListQuery(userSortable, {
  email: Type.Optional(Type.String({ minLength: 1, maxLength: 254 })),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 }))
})
export type UserListQueryType = Static<typeof UserListQuery>

export const UserList = ListOf(UserFields)
