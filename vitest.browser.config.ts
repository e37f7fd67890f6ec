import { defineConfig } from 'vitest/config'
import { tiers } from './test/tiers.js'

// The HTML report in Debian's headless Chromium (npm run test:browser): CI installs chromium first,
// as it does Debian's PostgreSQL, so the default npm test needs no browser.
export default defineConfig({
  test: {
    include: [...tiers.browser],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
  },
})
