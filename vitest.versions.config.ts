import { defineConfig } from 'vitest/config'
import { tiers } from './test/tiers.js'

// PostgreSQL 14 to 17, each started by its test file: run by CI (npm run test:versions), kept out
// of the default npm test so that it stays quick.
export default defineConfig({
  test: {
    include: [...tiers.versions],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
})
