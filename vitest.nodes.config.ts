import { defineConfig } from 'vitest/config'
import { tiers } from './test/tiers.js'

// The packed tarball on Node 22, 24 and 26, each from npm's `node` package: run by CI
// (npm run test:nodes), kept out of npm test, which runs on whatever Node the machine has.
export default defineConfig({
  test: {
    include: [...tiers.nodes],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 600_000,
  },
})
