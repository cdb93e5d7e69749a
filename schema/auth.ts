import { Type, type Static } from '@sinclair/typebox'
import { Email } from './common.js'
import { Password } from './users.js'

export const LoginBody = Type.Object({
  email: Email,
  // Any length: a login only compares; the rules apply where a password is set.
  password: Type.String({ minLength: 1, maxLength: 1024, writeOnly: true }),
  deviceToken: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 1024,
    writeOnly: true,
    description: 'The `deviceToken` of an earlier sign-in of this account, from this client: failed sign-ins from elsewhere do not lock it out. Anything else is ignored.'
  }))
}, { additionalProperties: false })
export type LoginBodyType = Static<typeof LoginBody>

export const AccessTokenResponse = Type.Object({
  accessToken: Type.String({ description: 'Send it as `Authorization: Bearer <accessToken>`.' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'Seconds until the token expires.' })
}, { additionalProperties: false })

/** What a sign-in answers: the access token, and this client's device token. */
export const LoginResponse = Type.Object({
  ...AccessTokenResponse.properties,
  deviceToken: Type.String({ description: 'Keep it, and send it with your next sign-in to this account (`deviceToken`): failed sign-ins from elsewhere then do not lock you out. It signs no one in by itself.' })
}, { additionalProperties: false })

const OneTimeToken = Type.String({ minLength: 1, maxLength: 200, description: 'The token from the email.' })

export const VerifyEmailBody = Type.Object({ token: OneTimeToken }, { additionalProperties: false })

export const ResetPasswordBody = Type.Object({ token: OneTimeToken, password: Password }, { additionalProperties: false })

export const Queued = Type.Object({
  status: Type.Literal('queued', { description: 'The email with a one-time token is queued for sending.' })
}, { additionalProperties: false })
