import type { Migration } from 'kysely'
import * as initial from './0001_initial.js'
import * as auth from './0002_auth.js'
import * as idempotency from './0003_idempotency.js'
import * as posts from './0004_posts.js'
import * as persistedQueries from './0006_persisted_queries.js'
import * as learntQueries from './0007_learnt_queries.js'
import * as authorNames from './0008_author_names.js'
import * as sessions from './0009_sessions.js'
import * as loginFailures from './0010_login_failures.js'
import * as roleChanges from './0011_role_changes.js'
import * as productsSearch from './0012_products_search.js'
import * as postsSearch from './0013_posts_search.js'
import * as idempotencyFingerprints from './0014_idempotency_fingerprints.js'
import * as loginDevices from './0015_login_devices.js'

/** Every migration, in order. Listed statically so that they ship inside `dist/` with no file lookups. */
export const migrations: Record<string, Migration> = {
  '0001_initial': initial,
  '0002_auth': auth,
  '0003_idempotency': idempotency,
  '0004_posts': posts,
  '0006_persisted_queries': persistedQueries,
  '0007_learnt_queries': learntQueries,
  '0008_author_names': authorNames,
  '0009_sessions': sessions,
  '0010_login_failures': loginFailures,
  '0011_role_changes': roleChanges,
  '0012_products_search': productsSearch,
  '0013_posts_search': postsSearch,
  '0014_idempotency_fingerprints': idempotencyFingerprints,
  '0015_login_devices': loginDevices
}
