/**
 * Every test tier's files, in one place: each vitest config takes its include patterns from here, and
 * test/unit/tiers.test.ts fails when a test file belongs to no tier or to two. Only `unit` and
 * `integration` run in `npm test`, which must need nothing but Node and npm; the others need
 * Chromium, Debian's PostgreSQL, Deno, other Node lines or a long run, and `.ci/run` installs what they need first.
 */
export const tiers = {
  unit: ['test/unit/**/*.test.ts'],
  integration: ['test/integration/**/*.test.ts', 'examples/**/*.test.mjs'],
  versions: ['test/versions/**/*.test.ts'],
  soak: ['test/soak/**/*.test.ts'],
  browser: ['test/browser/**/*.test.ts'],
  nodes: ['test/nodes/**/*.test.ts'],
} as const satisfies Record<string, readonly string[]>

export type Tier = keyof typeof tiers
