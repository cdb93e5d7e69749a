import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { purgeExpired } from '../db/housekeeping.js'
import { LOGIN_FAILURES_PER_ACCOUNT } from './auth.js'

/** How often expired rows are deleted. */
export const PURGE_EVERY_MS = 60_000

/**
 * Deletes expired rows (sign-in failures, revocations, one-time tokens, queued emails, idempotency records) once the
 * application is ready and then every `PURGE_EVERY_MS`. Every instance does it; the deletes are
 * harmless twice. A failure is logged and tried again next time.
 */
async function housekeeping (app: FastifyInstance): Promise<void> {
  let running: Promise<void> | undefined
  const purge = (): void => {
    running ??= purgeExpired(app.db, LOGIN_FAILURES_PER_ACCOUNT.windowSeconds)
      .catch((err: unknown) => { app.log.warn({ err }, 'could not delete expired rows') })
      .finally(() => { running = undefined })
  }
  let timer: NodeJS.Timeout | undefined
  app.addHook('onReady', async () => {
    purge()
    await running
    timer = setInterval(purge, PURGE_EVERY_MS).unref()
  })
  app.addHook('onClose', async () => {
    clearInterval(timer)
    await running
  })
}

export default fp(housekeeping, { name: 'tandem-housekeeping', fastify: '5.x', dependencies: ['tandem-database'] })
