import { chmod, readFile, writeFile } from 'node:fs/promises'
import { defineConfig, type Options } from 'tsup'

// The library's entries here and the "exports" map in package.json must name the same files.
const library = {
  index: 'src/index.ts',
  report: 'src/report/index.ts',
  schemas: 'src/schemas.ts',
  vitest: 'src/testing/vitest.ts',
  jest: 'src/testing/jest.ts',
}

const common: Options = {
  target: 'node20',
  external: ['vitest', 'expect'],
  // No source maps in the package: they were 4.4 MB of its 6.7.
  sourcemap: false,
}

export default defineConfig([
  {
    ...common,
    // One ESM build of the library, the CLI and inspectWal's worker thread (src/wal/read-archive.ts
    // starts it; not an entry point of the package), split into shared chunks: the CLI and the
    // worker load the library's own code instead of copies of it bundled into each.
    entry: { ...library, cli: 'src/cli/cli.ts', 'archive-worker': 'src/wal/archive-worker.ts' },
    format: ['esm'],
    dts: { entry: library },
    clean: true,
    async onSuccess() {
      // The bin: a shebang on dist/cli.js alone (a banner would put it on every file of the build).
      const cli = 'dist/cli.js'
      await writeFile(cli, `#!/usr/bin/env node\n${await readFile(cli, 'utf8')}`)
      await chmod(cli, 0o755)
    },
  },
  {
    ...common,
    entry: library,
    format: ['cjs'],
    dts: true,
    // import.meta.url in the CommonJS build too: inspectWal finds its worker's file beside its own.
    shims: true,
  },
])
