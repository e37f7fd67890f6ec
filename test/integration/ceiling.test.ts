import pg from 'pg'
import { describe, expect, inject, it } from 'vitest'
import {
  calibrateStorage,
  estimateIngestCeiling,
  measureInsertCost,
  predictInsertCost,
  STORAGE_PRESETS,
} from '../../src/index.js'
import { describeOnPostgres } from '../support/backends.js'

describe('estimateIngestCeiling', () => {
  it("does the field notes' arithmetic: 345 bytes a row at 50,000 rows/s is ~17 MB/s of WAL for 2 MB/s of data", () => {
    const ceiling = estimateIngestCeiling({ bytesPerRow: 345, dataBytesPerRow: 40 }, { targetRowsPerSec: 50_000 })
    expect(ceiling.walMBps).toBeCloseTo(17.25, 10)
    expect(ceiling.dataMBps).toBeCloseTo(2, 10)
    expect(ceiling.walGBPerDay).toBeCloseTo(17.25 * 86.4, 8)
    expect(ceiling.archiveGBPerDay).toBe(ceiling.walGBPerDay)
    expect(ceiling.storage).toEqual(STORAGE_PRESETS.gp3)
  })

  it('binds on commit flushes for single-row transactions on gp3, by hand: 1 connection x 1 row / 11 ms', () => {
    const ceiling = estimateIngestCeiling(
      { bytesPerRow: 345, dataBytesPerRow: 40 },
      { storage: 'gp3', targetRowsPerSec: 50_000 },
    )
    // The flush also writes the commit's 345 bytes at 125 MB/s.
    const flushMs = 11 + 345 / 125_000
    expect(ceiling.limits['commit flush latency']).toBeCloseTo(1000 / flushMs, 10)
    expect(ceiling.limits['server CPU']).toBeNull()
    expect(ceiling.bindingLimit).toBe('commit flush latency')
    expect(ceiling.maxRowsPerSec).toBeCloseTo(1000 / flushMs, 6)
    expect(ceiling.headroom).toBeCloseTo(1000 / flushMs / 50_000, 6)
  })

  it('binds on bandwidth once commits are batched, by hand: 125 MB/s over WAL plus new pages a row', () => {
    const storage = { writeMBps: 100, iops: 1e9, fsyncMs: 1 }
    const ceiling = estimateIngestCeiling(
      { bytesPerRow: 300, dataBytesPerRow: 40 },
      { storage, rowsPerCommit: 1_000, connections: 16 },
    )
    // Growth estimate for a bare figure: 40 + 28 + 150 bytes of new pages a row, so 518 bytes written a row.
    expect(ceiling.limits['write bandwidth']).toBeCloseTo(100e6 / 518, 6)
    expect(ceiling.bindingLimit).toBe('write bandwidth')
    expect(ceiling.headroom).toBeNull()
  })

  it('binds on IOPS when flushes are many and cheap, by hand', () => {
    const storage = { writeMBps: 1e6, iops: 3_000, fsyncMs: 0.01 }
    const ceiling = estimateIngestCeiling(
      { bytesPerRow: 300, dataBytesPerRow: 40 },
      { storage, rowsPerCommit: 1, connections: 2 },
    )
    expect(ceiling.limits.IOPS).toBeCloseTo(3_000 / (0.5 + 218 / 8192), 6)
    expect(ceiling.bindingLimit).toBe('IOPS')
  })

  it('reports replication per replica and accepts measurements and predictions', async () => {
    const setup = 'create table t (id int8 primary key, at timestamptz not null)'
    const cost = await measureInsertCost({ setup, table: 't', count: 1_000 })
    const fromMeasurement = estimateIngestCeiling(cost, { targetRowsPerSec: 10_000, replicas: 2, storage: 'nvme' })
    expect(fromMeasurement.bytesPerRow).toBe(cost.bytesPerRow)
    // The measurement's own time a row gives the server CPU limit.
    expect(fromMeasurement.msPerRow).toBe(cost.timing.msPerRow)
    expect(fromMeasurement.limits['server CPU']).toBeCloseTo(1000 / (cost.timing.msPerRow ?? 0), 6)
    expect(fromMeasurement.replicationMBpsPerReplica).toBe(fromMeasurement.walMBps)
    const prediction = await predictInsertCost({
      description: {
        columns: [
          { name: 'id', type: 'bigint' },
          { name: 'at', type: 'timestamptz' },
        ],
        indexes: [{ name: 'pk', columns: ['id'], keyOrder: 'ascending' }],
      },
    })
    const fromPrediction = estimateIngestCeiling(prediction, { targetRowsPerSec: 10_000 })
    expect(fromPrediction.pagesDirtiedPerCheckpoint).toBeGreaterThan(0)
    expect(fromPrediction.dataMBps).toBeCloseTo((16 * 10_000) / 1e6, 10)
  })

  it('refuses a cost without bytes per row, and an unknown preset', () => {
    expect(() => estimateIngestCeiling({ bytesPerRow: 0 })).toThrow(/bytesPerRow/)
    expect(() => estimateIngestCeiling({ bytesPerRow: 100 }, { storage: 'floppy' as never })).toThrow(/storage/)
  })
})

describeOnPostgres('calibrateStorage on a real server', () => {
  it('reads the average WAL flush time from the server once it times them', async () => {
    const url = inject('postgresUrl')
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    try {
      await client.query('alter system set track_wal_io_timing = on')
      await client.query('select pg_reload_conf()')
      await new Promise((resolve) => setTimeout(resolve, 200))
      await client.query('create table if not exists flushes (id int)')
      for (let i = 0; i < 20; i++) await client.query('insert into flushes values ($1)', [i])
      await client.query('select pg_stat_force_next_flush()')
      await client.query('select 1')
      const calibration = await calibrateStorage({ db: url })
      expect(calibration.flushes).toBeGreaterThanOrEqual(20)
      expect(calibration.fsyncMs).toBeGreaterThan(0)
      expect(calibration.source).toContain('pg_stat_io')
    } finally {
      await client.query('drop table if exists flushes')
      await client.query('alter system reset track_wal_io_timing')
      await client.query('select pg_reload_conf()')
      await client.end()
    }
  })
})
