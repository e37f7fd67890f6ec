import { defineConfig } from 'vitest/config'

// Two tiers. unit: no server, pure modules and renderers over recorded results (npm run test:unit).
// integration: PGlite and a real PostgreSQL started by the global setup. npm test runs both.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts', 'examples/**/*.test.mjs'],
          exclude: ['test/unit/**', 'test/versions/**', 'test/soak/**', 'node_modules/**'],
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
