import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compareRemedies } from '../../src/index.js'
import { debianBinDir } from '../support/debian.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'

// Debian's PostgreSQL is built with lz4 and zstd, which the embedded builds lack.
describe("wal_compression with every method, on Debian's PostgreSQL", () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startPostgres([], { binDir: await debianBinDir() })
  })
  afterAll(() => server.stop())

  it('cuts the size of after-checkpoint images with pglz, lz4 and zstd', async () => {
    const setup = `create table if not exists metrics (id int8 primary key, at timestamptz not null, device int4 not null, v float8);
      create index if not exists metrics_device_at_idx on metrics (device, at);
      insert into metrics select i, timestamptz '2026-01-01' + i * interval '1 second', i % 500, i from generate_series(1, 100000) i on conflict do nothing`
    const result = await compareRemedies({ db: server.url, setup, table: 'metrics', count: 10_000, batchSizes: [100] })
    const imageSize = (cost: NonNullable<(typeof result.remedies)[number]['cost']>) =>
      cost.breakdown!.fpiBytes / cost.fpiCount!
    for (const method of ['pglz', 'lz4', 'zstd']) {
      const remedy = result.remedies.find((entry) => entry.name === `wal_compression = ${method}`)!
      expect(remedy.available).toBe(true)
      expect(imageSize(remedy.cost!)).toBeLessThan(0.7 * imageSize(result.baseline))
      expect(remedy.savingPct).toBeGreaterThan(0)
    }
  })
})
