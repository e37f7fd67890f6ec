import pg from 'pg'
import { describe, expect, inject, it } from 'vitest'
import { calibrateStorage, estimateIngestCeiling, measureInsertCost, predictInsertCost } from '../../src/index.js'
import { describeOnPostgres } from '../support/backends.js'

describe('estimateIngestCeiling on real results', () => {
  it('reports replication per replica and accepts measurements and predictions', async () => {
    const setup = 'create table t (id int8 primary key, at timestamptz not null)'
    const cost = await measureInsertCost({ setup, table: 't', count: 1_000 })
    const fromMeasurement = estimateIngestCeiling(cost, { targetRowsPerSec: 10_000, replicas: 2, storage: 'nvme' })
    expect(fromMeasurement.bytesPerRow).toBe(cost.bytesPerRow)
    // The measurement's parts give the planned transaction's time: by default one INSERT of its
    // rowsPerCommit rows (here 1), whatever way the measurement sent its rows.
    const parts = cost.timing.parts
    expect(parts).not.toBeNull()
    expect([fromMeasurement.method, fromMeasurement.rowsPerStatement, fromMeasurement.statementsPerCommit]).toEqual([
      'multirow',
      1,
      1,
    ])
    expect(fromMeasurement.msPerRow).toBeCloseTo((parts?.msPerStatement ?? 0) + (parts?.insertMsPerRow ?? 0), 9)
    expect(fromMeasurement.limits['server CPU']).toBeCloseTo(1000 / (fromMeasurement.msPerRow ?? 0), 6)
    // A thousand rows a COPY: one COPY's statement and a thousand COPY rows.
    const byCopy = estimateIngestCeiling(cost, { rowsPerCommit: 1_000, method: 'copy', storage: 'nvme' })
    expect(byCopy.statementsPerCommit).toBe(1)
    expect(byCopy.transactionMs).toBeCloseTo((parts?.copyMsPerStatement ?? 0) + 1_000 * (parts?.copyMsPerRow ?? 0), 9)
    // Without parts (the probe turned off), the time a row as the measurement sent its rows.
    const unprobed = await measureInsertCost({ setup, table: 't', count: 1_000, timingProbe: false })
    expect(estimateIngestCeiling(unprobed, { storage: 'nvme' }).msPerRow).toBe(unprobed.timing.msPerRow)
    // A plan that cannot be: more rows a statement than a transaction, or several rows an 'insert'.
    expect(() => estimateIngestCeiling(cost, { rowsPerCommit: 10, rowsPerStatement: 100 })).toThrow(/rowsPerStatement/)
    expect(() => estimateIngestCeiling(cost, { method: 'insert', rowsPerStatement: 10, rowsPerCommit: 10 })).toThrow(
      /one row an INSERT/,
    )
    // The whole call (a fresh embedded database, setup, the batch, its WAL read back) holds the batch.
    expect(cost.timing.callMs).toBeGreaterThanOrEqual(Math.floor(cost.timing.batchMs))
    expect(cost.timing.callMs).toBeGreaterThanOrEqual(cost.durationMs)
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
