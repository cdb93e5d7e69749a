// npm run seed -- --users N --posts N --comments N --products N --orders N
// Adds generated rows to the database named by DATABASE_URL, or to the PGlite data directory DATA_DIR
// (default ./.data) when DATABASE_URL is unset. Flags left out count as 0.
import { parseArgs } from 'node:util'
import { connect } from './connect.js'
import { seed, seedResources, type SeedCounts } from './seed.js'

const usage = 'usage: npm run seed -- --users N --posts N --comments N --products N --orders N'

function fail (message: string): never {
  process.stderr.write(`seed: ${message}\n`)
  process.exit(1)
}

function parseCounts (args: string[]): SeedCounts {
  let values: Record<string, string | boolean | undefined>
  try {
    values = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        users: { type: 'string' },
        posts: { type: 'string' },
        comments: { type: 'string' },
        products: { type: 'string' },
        orders: { type: 'string' },
        help: { type: 'boolean', short: 'h' }
      }
    }).values
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    // `--users -5` reads as a missing value followed by an option: say what is wrong with it instead.
    const ambiguous = /^Option '--(\w+)' argument is ambiguous/.exec(message)?.[1]
    const value = ambiguous === undefined ? undefined : args[args.indexOf(`--${ambiguous}`) + 1]
    if (ambiguous !== undefined && value !== undefined) fail(`--${ambiguous} must be a non-negative integer, got '${value}'`)
    fail(`${message.split('\n')[0] ?? message} (${usage})`)
  }
  if (values.help === true) {
    process.stdout.write(`${usage}\n`)
    process.exit(0)
  }
  const counts: SeedCounts = { users: 0, posts: 0, comments: 0, products: 0, orders: 0 }
  for (const key of seedResources) {
    const raw = values[key]
    if (typeof raw !== 'string') continue
    const text = raw.trim().replaceAll('_', '')
    const value = Number(text)
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value)) fail(`--${key} must be a non-negative integer, got '${raw}'`)
    counts[key] = value
  }
  if (seedResources.every((key) => counts[key] === 0)) fail(`nothing to seed (${usage})`)
  return counts
}

const counts = parseCounts(process.argv.slice(2))
const databaseUrl = process.env.DATABASE_URL === '' ? undefined : process.env.DATABASE_URL
const dataDir = process.env.DATA_DIR ?? './.data'

let db
try {
  db = await connect({ databaseUrl, dataDir, poolSize: 2 })
} catch (error) {
  fail(`cannot open the database: ${error instanceof Error ? error.message : String(error)}`)
}
let failed = false
try {
  const { inserted, ms } = await seed(db, counts)
  const rows = Object.entries(inserted).map(([table, n]) => `${n} ${table}`).join(', ')
  process.stdout.write(`seeded ${rows} in ${(ms / 1000).toFixed(1)} s\n`)
} catch (error) {
  process.stderr.write(`seed: ${error instanceof Error ? error.message : String(error)}\n`)
  failed = true
} finally {
  await db.destroy()
}
// Set only now: closing PGlite resets process.exitCode.
process.exitCode = failed ? 1 : 0
