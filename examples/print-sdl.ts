// Prints the GraphQL SDL that the example's declarations give, as the API serves it:
// `npx tsx examples/print-sdl.ts > examples/labels.graphql`. test/examples/labels.test.ts checks
// that the file and the declarations agree.
import { resourceSdl } from 'tandem-api'
import { labels } from './labels.js'

process.stdout.write(resourceSdl([labels]) + '\n')
