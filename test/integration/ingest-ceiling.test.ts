import pg from 'pg'
import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import { fieldNotesSetup } from '../../src/index.js'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { CORES, ingestCases } from '../support/ingest-cases.js'

const TABLE = 'walcost_demo.device_metrics'

describeOnPostgres('ingest ceilings against a real committed ingest', () => {
  let database: TestDatabase
  let admin: pg.Client
  beforeAll(async () => {
    admin = new pg.Client({ connectionString: inject('postgresUrl') })
    await admin.connect()
    await admin.query('alter system set track_wal_io_timing = on')
    await admin.query('select pg_reload_conf()')
    database = await openPostgresDatabase(inject('postgresUrl'))
  })
  afterAll(async () => {
    await database?.close()
    await admin.query('alter system reset track_wal_io_timing')
    await admin.query('select pg_reload_conf()')
    await admin.end()
  })

  it('estimates each run from a measurement, the calibrated storage and the cores, naming the limit that binds', async () => {
    // The field notes' table: three B-tree indexes, 200,000 rows.
    await database.exec(fieldNotesSetup(200_000))
    await database.exec(`vacuum analyze ${TABLE}`)
    const { cases, calibration, cost, fsyncMs } = await ingestCases(database.url as string, TABLE)
    const leftover = await database.query(
      `select count(*)::int as n from pg_class where relname like 'walcost_scratch_%'`,
    )
    expect(leftover[0]?.n).toBe(0)
    expect(cases.map((entry) => [entry.rowsPerCommit, entry.connections])).toEqual([
      [1, 1],
      [1, 4],
      [100, 1],
      [100, 4],
      [1_000, 1],
      [1_000, 4],
    ])
    expect(cost.timing.msPerRow).toBeGreaterThan(0)
    const { msPerRow } = cost.timing
    const { commitMs, clientMsPerRow } = calibration
    console.log(JSON.stringify({ msPerRow, fsyncMs, commitMs, clientMsPerRow, cases }))
    for (const entry of cases) {
      const label = JSON.stringify(entry)
      // Known gap (docs/benchmarks.md): sessions outnumbering the cores at 100 rows a commit and
      // more reach 1.45-1.9x less than the estimate on this 2-core machine; bounded, not yet held.
      const crowded = entry.connections > CORES && entry.rowsPerCommit > 1
      expect.soft(entry.ratio, label).toBeGreaterThanOrEqual(0.75)
      expect.soft(entry.ratio, label).toBeLessThanOrEqual(crowded ? 2.1 : 1.25)
      // One row a commit waits on its flush; a hundred rows and more keep the cores busy.
      expect.soft(entry.binding, label).toBe(entry.rowsPerCommit === 1 ? 'commit flush latency' : 'server CPU')
    }
  }, 600_000)
})
