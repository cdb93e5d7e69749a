import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { Id, Timestamp } from './common.js'

const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

const Bio = nullable(Type.String({ maxLength: 5000 }))
const AvatarUrl = nullable(Type.String({ format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?://', maxLength: 2048, description: 'An http(s) URL.' }))
const Location = nullable(Type.String({ maxLength: 200 }))

export const Profile = Type.Object({
  user_id: Id,
  bio: Bio,
  avatar_url: AvatarUrl,
  location: Location,
  updated_at: Timestamp
}, { additionalProperties: false })

/** A profile as `fields=` narrows it: `user_id` always comes. */
export const ProfileFields = Type.Composite([
  Type.Object({ user_id: Id }),
  Type.Partial(Type.Object({ bio: Bio, avatar_url: AvatarUrl, location: Location, updated_at: Timestamp }))
])

/** PUT replaces (a field left out becomes null); PATCH changes only what is sent (null clears). */
export const ProfileBody = Type.Object({
  bio: Type.Optional(Bio),
  avatar_url: Type.Optional(AvatarUrl),
  location: Type.Optional(Location)
}, { additionalProperties: false })
export type ProfileBodyType = Static<typeof ProfileBody>
