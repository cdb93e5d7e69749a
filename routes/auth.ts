import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { resetPassword, verifyEmail } from '../db/auth.js'
import { requireAuth } from '../plugins/auth.js'
import { hashToken, sendOneTimeToken } from '../plugins/one-time-tokens.js'
import { hashPassword } from '../plugins/passwords.js'
import { AccessTokenResponse, LoginBody, Queued, ResetPasswordBody, VerifyEmailBody } from '../schema/auth.js'
import { IdParams, NoContent, WriteQuery, errors } from '../schema/common.js'
import { badRequest, notFound } from '../schema/errors.js'

const tags = ['auth']
const unusable = () => badRequest('token is invalid, used or expired', 'token')

/** Sign-in, sign-out, and the one-time tokens that verify an email or set a password. */
const authRoutes: FastifyPluginAsync = async (fastify) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  app.post('/auth/login', {
    config: { bruteForceKey: (request) => String((request.body as { email?: unknown }).email) },
    schema: { tags, summary: 'Sign in', querystring: WriteQuery, body: LoginBody, response: { 200: AccessTokenResponse, ...errors(400, 401, 415, 429) } }
  }, async (request) => app.accessTokens.login(request.body.email, request.body.password))

  app.post('/auth/logout', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'Sign out: the token is revoked at once', querystring: WriteQuery, response: { 204: NoContent, ...errors(400, 401, 429) } }
  }, async (request, reply) => {
    await app.accessTokens.revoke(request.user)
    return reply.code(204).send(null)
  })

  app.post('/users/:id/verify-email', {
    config: { auth: 'selfOrAdmin', transaction: true },
    schema: { tags, summary: 'Email a one-time token that confirms the address', params: IdParams, querystring: WriteQuery, response: { 202: Queued, ...errors(400, 401, 403, 404, 429) } }
  }, async (request, reply) => {
    if (!await sendOneTimeToken(request.db, request.params.id, 'verify_email')) throw notFound('user')
    return reply.code(202).send({ status: 'queued' })
  })

  app.post('/users/:id/reset-password', {
    config: { auth: 'selfOrAdmin', transaction: true },
    schema: { tags, summary: 'Email a one-time token that sets a new password', params: IdParams, querystring: WriteQuery, response: { 202: Queued, ...errors(400, 401, 403, 404, 429) } }
  }, async (request, reply) => {
    if (!await sendOneTimeToken(request.db, request.params.id, 'reset_password')) throw notFound('user')
    return reply.code(202).send({ status: 'queued' })
  })

  app.post('/auth/verify-email', {
    config: { transaction: true },
    schema: { tags, summary: 'Confirm an email address with its one-time token', querystring: WriteQuery, body: VerifyEmailBody, response: { 204: NoContent, ...errors(400, 415, 429) } }
  }, async (request, reply) => {
    if (!await verifyEmail(request.db, hashToken(request.body.token))) throw unusable()
    return reply.code(204).send(null)
  })

  // Not `transaction`: the revocations are re-read through `app.db` before answering.
  app.post('/auth/reset-password', {
    schema: { tags, summary: 'Set a new password with a one-time token', querystring: WriteQuery, body: ResetPasswordBody, response: { 204: NoContent, ...errors(400, 415, 429) } }
  }, async (request, reply) => {
    const passwordHash = await hashPassword(request.body.password)
    if (!await resetPassword(app.db, hashToken(request.body.token), passwordHash, app.accessTokens.newTokensExpireAt())) throw unusable()
    await app.accessTokens.refreshRevocations()
    return reply.code(204).send(null)
  })
}

export default authRoutes
