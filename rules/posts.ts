// The post rules both styles share.
import type { AccessUser } from '../plugins/auth.js'
import { forbidden } from '../schema/errors.js'

/**
 * Who a new post is written as: the caller, unless an administrator names another author
 * (REST `author_id`, GraphQL `authorId`); anyone else naming another author is refused.
 */
export function authorOf (caller: AccessUser, requested: number | undefined): number {
  if (requested === undefined || requested === caller.sub) return caller.sub
  if (caller.role !== 'admin') throw forbidden('only an administrator may post as another user')
  return requested
}
