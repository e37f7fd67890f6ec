import { defineConfig } from 'tsup'

// The entries here and the "exports" map in package.json must name the same files.
export default defineConfig([
  {
    entry: {
      index: 'src/index.ts',
      report: 'src/report/index.ts',
      schemas: 'src/schemas.ts',
      vitest: 'src/testing/vitest.ts',
      jest: 'src/testing/jest.ts',
    },
    format: ['esm', 'cjs'],
    dts: true,
    clean: true,
    sourcemap: true,
    target: 'node20',
    external: ['vitest', 'expect'],
  },
  {
    entry: { cli: 'src/cli/cli.ts' },
    format: ['esm'],
    banner: { js: '#!/usr/bin/env node' },
    sourcemap: true,
    target: 'node20',
  },
])
