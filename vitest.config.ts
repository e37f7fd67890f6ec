import { defineConfig } from 'vitest/config'
import { tiers } from './test/tiers.js'

// npm test runs two tiers. unit: no server, pure modules and renderers over recorded results
// (npm run test:unit). integration: PGlite and a real PostgreSQL started by the global setup
// (WALCOST_BACKENDS=pglite runs the PGlite half alone). The other tiers have configs of their own.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: [...tiers.unit],
        },
      },
      {
        test: {
          name: 'integration',
          include: [...tiers.integration],
          globalSetup: ['test/support/global-setup.ts'],
          // WAL is cluster-wide: two files measuring on the same server at once would see each other.
          fileParallelism: false,
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
    ],
  },
})
