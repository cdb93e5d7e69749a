// The links of a served resource's manyToMany relations, written under their rule (`links`): this
// row locked and read by the caller, the owner rule checked on it, the other row one the caller may
// read, the link made or removed in the same transaction, and its event announced after the commit —
// never the resource's `updated`, since its row did not change.
import type { FastifyInstance } from 'fastify'
import { deleteLink, insertLink, lockLinkedRow } from '../db/links.js'
import type { Row } from '../db/pagination.js'
import type { ResourceData } from '../db/resource.js'
import type { AccessUser } from '../plugins/auth.js'
import { forbidden, notFound, unauthenticated } from '../schema/errors.js'
import { linksOf, type ResourceLink } from '../schema/links.js'
import type { Key, KeyType } from '../schema/keys.js'
import type { LinkEvent, Resource } from '../schema/resource.js'
import { tellDeclaredSubscribers } from './events.js'
import { callerNeeded, forbidsOthersRows, mayRead, ownsInRow, readableOwner, readRefused } from './resource.js'
import { ownerRuleOf } from '../schema/owners.js'
import type { Db } from '../db/connect.js'
import type { WriteDb } from './resource-writes.js'

/** What a link write did, and to what. */
export interface LinkResult<R extends object = Row> {
  /** Whether the call changed anything: the link made, or removed; false when it was there already. */
  changed: boolean
  /** This resource's row, as the caller may see it. */
  row: R
  /** The link by the join table's columns: `{ task_id: 3, user_id: 7 }`. */
  link: Record<string, Key>
}

/** Where a link is written: the database (or a function that opens the transaction), and how to run what waits for the commit. */
export interface LinkOptions {
  db?: WriteDb | undefined
  afterCommit?: ((fn: () => void) => void) | undefined
}

/** What a link's event carries on the event bus: both rows as the write saw them, and the link. */
export interface LinkEventPayload {
  row: Row
  other: Row
  link: Record<string, Key>
}

/** The ids a subscriber of a link's events asked for (undefined: any). */
export interface LinkWanted {
  id?: Key | undefined
  otherId?: Key | undefined
}

/**
 * The link writes of `resource` (its statements `data`) on `app`; `shown` shows a row as its caller
 * may see it (the field rules).
 */
export function linkWrites (app: FastifyInstance, resource: Resource, data: ResourceData, resources: readonly Resource[], shown: (caller: AccessUser | undefined, row: Row) => Row) {
  const links = new Map(linksOf(resource, resources).map((link) => [link.relation.name, link]))
  const { name, key } = resource

  /** The written link `relation`, its caller admitted by its rule (401 without one, 403 for a non-admin under `admin`). */
  const admitted = (relation: string, caller: AccessUser | undefined): { link: ResourceLink, user: AccessUser } => {
    const link = links.get(relation)
    if (link === undefined) throw forbidden(`links of ${relation} of ${name} are not written through the API`)
    if (caller === undefined) throw unauthenticated()
    if (callerNeeded(link.rule) === 'admin' && caller.role !== 'admin') throw forbidden('only an administrator may do this')
    return { link, user: caller }
  }

  /**
   * That `caller` may change the links of `row`: a row they may not read is no such row (404, or 403
   * with `othersRows: 'forbidden'`); on one they may read, the owner rule (403). Owned through a
   * relation, the row's owner is asked in the write's transaction `trx` (db/owners.ts, share-locked).
   */
  const mayLink = async (link: ResourceLink, caller: AccessUser, row: Readonly<Record<string, unknown>>, trx?: Db): Promise<void> => {
    let owned: boolean | undefined
    const owns = async (): Promise<boolean> => {
      owned ??= ownsInRow(resource, caller.sub, row) ?? (trx !== undefined && await data.owns(trx, row[key] as Key, caller.sub))
      return owned
    }
    const readOwner = readableOwner(resource, caller)
    if (readOwner !== undefined && !await owns()) throw forbidsOthersRows(resource) ? readRefused(resource) : notFound(name)
    const { rule } = link
    if (rule !== 'owner' && rule !== 'ownerOrAdmin') return
    if (rule === 'ownerOrAdmin' && caller.role === 'admin') return
    if (!await owns()) throw forbidden(`only its owner${rule === 'owner' ? '' : ' or an administrator'} may change the ${link.relation.name} of this ${name}`)
  }

  /** Announces `event` of the link after the commit, when the relation declares it. */
  const announce = (link: ResourceLink, event: LinkEvent, payload: LinkEventPayload, afterCommit: (fn: () => void) => void): void => {
    if (!link.events.includes(event)) return
    afterCommit(() => { tellDeclaredSubscribers(app, link.topics[event], payload) })
  }

  async function write (kind: 'link' | 'unlink', caller: AccessUser | undefined, relation: string, id: Key, otherId: Key, options: LinkOptions): Promise<LinkResult> {
    const { link, user } = admitted(relation, caller)
    const target = link.relation.target
    const other = target.resource
    if (other === undefined) throw new Error(`relation ${relation} of ${name}: ${target.name} is declared; pass its declaration with the resources`)
    // A row that is its own owner is known from the id: refused before it is looked for, as a change is.
    if (resource.owner === key && resource.owners.length === 1) await mayLink(link, user, { [key]: id })
    const owner = readableOwner(other, caller)
    const linkedRow = { table: other.table, key: other.key, columns: other.columns, owner: owner === undefined ? undefined : { owners: ownerRuleOf(other), id: owner } }
    const table = { through: link.relation.through, key: link.relation.key, otherKey: link.relation.otherKey }
    const db = options.db ?? app.db
    let changed = false
    let otherRow: Row | undefined
    // This row locked first: two writes of its links wait on each other, and it cannot go meanwhile.
    const row = await data.withLocked(typeof db === 'function' ? await db() : db, id, async (current, trx) => { await mayLink(link, user, current, trx) }, async (trx, current) => {
      otherRow = await lockLinkedRow(trx, linkedRow, otherId)
      if (otherRow === undefined) throw notFound(target.name)
      changed = kind === 'link' ? await insertLink(trx, table, id, otherId) : await deleteLink(trx, table, id, otherId)
      if (!changed && kind === 'unlink') throw notFound(`${name}'s ${link.singular}`)
      return current
    })
    if (row === undefined) throw notFound(name)
    const ids = { [link.relation.key]: id, [link.relation.otherKey]: otherId }
    if (changed) announce(link, kind === 'link' ? 'linked' : 'unlinked', { row, other: otherRow as Row, link: ids }, options.afterCommit ?? ((fn) => { fn() }))
    return { changed, row: shown(caller, row), link: ids }
  }

  return {
    link: async (caller: AccessUser | undefined, relation: string, id: Key, otherId: Key, options: LinkOptions = {}) => write('link', caller, relation, id, otherId, options),
    unlink: async (caller: AccessUser | undefined, relation: string, id: Key, otherId: Key, options: LinkOptions = {}) => write('unlink', caller, relation, id, otherId, options),
    /** The key type of the rows `relation` links to (an integer for a relation that links none). */
    otherKeyType: (relation: string): KeyType => links.get(relation)?.relation.target.resource?.keyType ?? 'integer',
    /**
     * What a subscriber `caller` hears of the events of the links of `relation`: both rows ones they may
     * read, and the ids they asked for (the read rule of this resource admitted them: see `hearing`).
     */
    hearing (caller: AccessUser | undefined, relation: string, wanted: LinkWanted) {
      const link = links.get(relation)
      const other = link?.relation.target.resource
      if (link === undefined || other === undefined) throw new Error(`${name} writes no links of ${relation}`)
      // The other row's rule as a read of it asks: a caller when it is not public.
      if (caller === undefined && callerNeeded(other.auth.read) !== 'nobody') throw unauthenticated()
      const { key: column, otherKey } = link.relation
      return (payload: LinkEventPayload): boolean =>
        // Compared as text: an event may have come through JSON.
        (wanted.id === undefined || String(payload.link[column]) === String(wanted.id)) &&
        (wanted.otherId === undefined || String(payload.link[otherKey]) === String(wanted.otherId)) &&
        // An owner through a relation cannot be told from an event's row: not heard (as `hearing` of the resource refuses it).
        mayRead(resource, caller, payload.row) === true && mayRead(other, caller, payload.other) === true
    }
  }
}
