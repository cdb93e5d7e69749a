import autocannon from 'autocannon'

export interface Load {
  origin: string
  requests: autocannon.Request[]
  connections: number
  /** Run for this long… */
  seconds?: number
  /** …or send exactly this many requests and wait for every answer. */
  amount?: number
}

export interface Fired {
  result: autocannon.Result
  /** The first response body that failed the check, to show what went wrong. */
  firstBadBody: string | undefined
}

/**
 * Every response must be free of `"error"`/`"errors"` keys: REST errors and GraphQL's 200-with-errors
 * both count as mismatches, so a fast failure can never pass for a fast answer.
 */
const healthy = (body: unknown) => typeof body === 'string' && !body.includes('"error')

/** Runs autocannon in this process: `connections` keep-alive connections, one request at a time each. */
export async function fire (load: Load): Promise<Fired> {
  let firstBadBody: string | undefined
  const result = await autocannon({
    url: load.origin,
    requests: load.requests,
    connections: load.connections,
    pipelining: 1,
    ...(load.amount === undefined ? { duration: load.seconds } : { amount: load.amount }),
    timeout: 10,
    verifyBody: (body) => {
      if (healthy(body)) return true
      firstBadBody ??= String(body).slice(0, 500)
      return false
    }
  })
  return { result, firstBadBody }
}

/** Responses received, whatever their status. */
export function responses (result: autocannon.Result): number {
  return result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx']
}
