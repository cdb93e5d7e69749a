import { GraphQLError } from 'graphql'
import { graphqlCode, TandemError } from '../schema/errors.js'

/** Runs a subscription resolver step; its errors reach the client with their code (subscriptions bypass the errorFormatter). */
export async function subscriptionStep<T> (step: () => Promise<T>): Promise<T> {
  try {
    return await step()
  } catch (error) {
    if (error instanceof TandemError) {
      throw new GraphQLError(error.message, { extensions: error.field === undefined ? { code: graphqlCode(error.code) } : { code: graphqlCode(error.code), field: error.field } })
    }
    throw error
  }
}

/** The events of `source` that `keep` accepts. */
export async function * only<T> (source: AsyncIterable<T>, keep: (value: T) => boolean): AsyncGenerator<T> {
  for await (const value of source) if (keep(value)) yield value
}
