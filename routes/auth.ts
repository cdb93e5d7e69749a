import type { FastifyPluginAsync } from 'fastify'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { requireAuth } from '../plugins/auth.js'
import { confirmEmail, requestOneTimeToken, setPasswordWithToken } from '../rules/accounts.js'
import { LoginBody, LoginResponse, Queued, ResetPasswordBody, VerifyEmailBody } from '../schema/auth.js'
import { IdParams, NoContent, WriteQuery, errors } from '../schema/common.js'

const tags = ['auth']

/** Sign-in, sign-out, and the one-time tokens that verify an email or set a password. */
const authRoutes: FastifyPluginAsync = async (fastify) => {
  requireAuth(fastify)
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>()

  // Not replayable: its answer is an access token (and a device token), which is never stored.
  app.post('/auth/login', {
    config: { bruteForceKey: (request) => String((request.body as { email?: unknown }).email), replayable: false },
    schema: { tags, summary: 'Sign in', querystring: WriteQuery, body: LoginBody, response: { 200: LoginResponse, ...errors(400, 401, 415, 429) } }
  }, async (request) => app.accessTokens.login(request.body.email, request.body.password, request.body.deviceToken))

  app.post('/auth/logout', {
    config: { auth: 'authenticated' },
    schema: { tags, summary: 'Sign out: the token is revoked at once', querystring: WriteQuery, response: { 204: NoContent, ...errors(400, 401, 429) } }
  }, async (request, reply) => {
    await app.accessTokens.revoke(request.user)
    return reply.code(204).send(null)
  })

  app.post('/users/:id/verify-email', {
    config: { auth: 'selfOrAdmin', transaction: true },
    schema: { tags, summary: 'Email a one-time token that confirms the address (at most oneTimeEmailsPerHour)', params: IdParams, querystring: WriteQuery, response: { 202: Queued, ...errors(400, 401, 403, 404, 429) } }
  }, async (request, reply) => {
    await requestOneTimeToken(app, await request.writeDb(), request.params.id, 'verify_email')
    return reply.code(202).send({ status: 'queued' })
  })

  app.post('/users/:id/reset-password', {
    config: { auth: 'selfOrAdmin', transaction: true },
    schema: { tags, summary: 'Email a one-time token that sets a new password (at most oneTimeEmailsPerHour)', params: IdParams, querystring: WriteQuery, response: { 202: Queued, ...errors(400, 401, 403, 404, 429) } }
  }, async (request, reply) => {
    await requestOneTimeToken(app, await request.writeDb(), request.params.id, 'reset_password')
    return reply.code(202).send({ status: 'queued' })
  })

  app.post('/auth/verify-email', {
    config: { transaction: true },
    schema: { tags, summary: 'Confirm an email address with its one-time token', querystring: WriteQuery, body: VerifyEmailBody, response: { 204: NoContent, ...errors(400, 415, 429) } }
  }, async (request, reply) => {
    await confirmEmail(await request.writeDb(), request.body.token)
    return reply.code(204).send(null)
  })

  // Not `transaction`: the revocations are re-read through `app.db` before answering.
  app.post('/auth/reset-password', {
    config: { attemptLimit: { kind: 'resetPassword', account: () => '' } },
    schema: { tags, summary: 'Set a new password with a one-time token; every session of the user ends', querystring: WriteQuery, body: ResetPasswordBody, response: { 204: NoContent, ...errors(400, 415, 429) } }
  }, async (request, reply) => {
    await setPasswordWithToken(app, request.body.token, request.body.password)
    return reply.code(204).send(null)
  })
}

export default authRoutes
