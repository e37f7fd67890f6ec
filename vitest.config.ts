import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.mjs'],
    exclude: ['test/versions/**', 'test/soak/**', 'node_modules/**'],
    globalSetup: ['test/support/global-setup.ts'],
    // WAL is cluster-wide: two files measuring on the same server at once would see each other.
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
})
