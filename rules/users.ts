// Users (CONTRACT §2, §11), declared with the public `defineResource`, as a host declares its own
// resources: anyone signs up; any signed-in user reads them, an email only by its user and
// administrators; the user or an administrator changes or deletes one. What an account needs beyond
// its row is in its hooks: the password's hash, the profile made with it, the current password an
// email change of one's own asks for, the notice to the old address, the sessions a deletion ends.
import { Type } from '@sinclair/typebox'
import { createProfile, queueNotice, releaseUser, storedEmail, verifiedUnlessChanged } from '../db/users.js'
import { hashPassword } from '../plugins/passwords.js'
import { badRequest, forbidden } from '../schema/errors.js'
import { defineResource } from '../schema/resource.js'
import { CurrentPassword, Password, UserRepresentation } from '../schema/users.js'

/** How long the notice of an email change stays in the outbox. */
const NOTICE_LIFETIME_MS = 7 * 24 * 3600_000

const lowerCase = (value: unknown): string => String(value).toLowerCase()

export const users = defineResource({
  name: 'user',
  table: 'users',
  representation: UserRepresentation,
  generated: ['id', 'created_at'],
  // Each row is its user's own: owner rules mean the user itself, and a sign-up sets no owner.
  owner: 'id',
  writable: ['name', 'email'],
  inputs: {
    password: { schema: Type.Optional(Password), on: ['create'] },
    // Named as REST names it in GraphQL too (`UpdateUserInput.current_password`), as the contract has it.
    current_password: { schema: Type.Optional(CurrentPassword), on: ['update'], graphqlName: 'current_password' }
  },
  // Sign-ups count against the per-address and per-address-and-account limits, in both styles.
  createLimit: { kind: 'signUp', account: (body) => lowerCase(body.email) },
  sort: ['name', 'created_at'],
  filters: { email: { field: 'email', op: 'caseInsensitive' }, name: { field: 'name' } },
  search: ['name', 'email'],
  fields: { email: { read: 'ownerOrAdmin' } },
  relations: {
    // Its list, `GET /users/{id}/posts`, is the posts' own: they are listed under their author.
    posts: { hasMany: 'post', key: 'author_id' }
  },
  auth: { read: 'authenticated', create: 'public', update: 'ownerOrAdmin', delete: 'ownerOrAdmin' },
  // A sign-up is one account at a time: an array would be up to BULK_MAX_ITEMS password hashes for one anonymous request.
  bulk: { create: false },
  hooks: {
    // Hashing is slow on purpose: it holds no transaction open. Without a password the account cannot
    // sign in until a reset sets one.
    async prepareCreate ({ values, input }) {
      return { ...values, password_hash: input.password === undefined ? null : await hashPassword(String(input.password)) }
    },
    async afterCreate ({ trx, row }) {
      await createProfile(trx, row.id)
    },
    // A new email of one's own needs the current password (a stolen token alone cannot move the account
    // elsewhere). Checked before the transaction: a wrong guess counts against the account's failure
    // budget, shared with sign-in, whatever the write becomes.
    async prepareUpdate ({ db, app, caller, id, values, input }) {
      if (values.email === undefined || caller?.sub !== id) return values
      const current = await storedEmail(db, id)
      if (current === undefined || lowerCase(current) === lowerCase(values.email)) return values
      if (input.current_password === undefined) throw badRequest('changing your email needs your current password', 'current_password')
      if (await app.accessTokens.checkPassword(current, String(input.current_password)) === undefined) throw forbidden('current_password is wrong')
      return values
    },
    // A new address is not verified yet; the same address in another case still is.
    beforeUpdate ({ values }) {
      return values.email === undefined ? values : { ...values, email_verified_at: verifiedUnlessChanged(String(values.email)) }
    },
    // The old address is told.
    async afterUpdate ({ trx, current, row }) {
      if (lowerCase(row.email) === lowerCase(current.email)) return
      await queueNotice(trx, row.id, current.email, {
        subject: 'Your email address was changed',
        body: `Hello ${current.name},\n\nthe email address of your account was changed to ${row.email}. Messages now go there.\nIf you did not do this, contact us at once.\n`
      }, new Date(Date.now() + NOTICE_LIFETIME_MS))
    },
    async beforeDelete ({ trx, app, current }) {
      await releaseUser(trx, current.id, app.accessTokens.newTokensExpireAt())
    },
    // Their sessions end on this instance before the answer (on the others within the second).
    afterDelete ({ app, afterCommit }) {
      afterCommit(async () => { await app.accessTokens.refreshRevocations() })
    }
  }
})
