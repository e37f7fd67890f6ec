import { defineConfig } from 'vitest/config'
import { tiers } from './test/tiers.js'

// The seeded fault-injection soak (npm run test:soak): its own PostgreSQL 18, one trial at a time.
// WALCOST_SOAK_SEED replays a run; WALCOST_SOAK_TRIALS sets its length (200 by default). The fuzz of
// inspectWal: WALCOST_FUZZ_SEED replays it, WALCOST_FUZZ_MUTATIONS sets its length (2,000).
export default defineConfig({
  test: {
    include: [...tiers.soak],
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
})
