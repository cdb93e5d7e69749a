import { Type } from '@sinclair/typebox'
import { Email, Id, Timestamp } from './common.js'
import type { FieldRules } from './resource.js'

const Name = Type.String({ minLength: 1, maxLength: 200 })
// `writeOnly`: never answered, and never part of an Idempotency-Key's fingerprint (plugins/idempotency.ts).
export const Password = Type.String({ minLength: 8, maxLength: 1024, writeOnly: true, description: 'At least 8 characters.' })

/** The password of the caller, needed when users change their own email. */
export const CurrentPassword = Type.String({ minLength: 1, maxLength: 1024, writeOnly: true, description: 'Your current password: needed to change your own email.' })

/** A user as its declaration has it (rules/users.ts): never a password or its hash. */
export const UserRepresentation = Type.Object({
  id: Id,
  name: Name,
  email: Email,
  created_at: Timestamp
}, { additionalProperties: false })

/**
 * The users' field rules, as their declaration says them (rules/users.ts): an email is read by its
 * user and administrators, null for everyone else. Users are their own owners.
 */
export const userFieldRules: FieldRules = Object.freeze({ owner: 'id', fields: Object.freeze({ email: 'ownerOrAdmin' }) })

/** An email as answers show it: null for callers other than its user and administrators. */
const ShownEmail = Type.Union([Email, Type.Null()], { description: 'Read by the user and administrators only; null for everyone else.' })

/** A user as answers show it to any caller: the email null unless it is theirs (or they are an administrator). */
export const User = Type.Object({
  id: Id,
  name: Name,
  email: ShownEmail,
  created_at: Timestamp
}, { additionalProperties: false })
