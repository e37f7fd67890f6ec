import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import {
  calibrateIngest,
  estimateIngestCeiling,
  fieldNotesSetup,
  measureInsertCost,
  STORAGE_PRESETS,
} from '../../src/index.js'
import { openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { selectedBackends } from '../support/selected-backends.js'

const run = promisify(execFile)
const TABLE = 'walcost_demo.device_metrics'
/** The ingest pgbench drives and the measurement times: the same statement, `rows` rows a commit. */
const insert = (rows: number) =>
  `insert into ${TABLE} select now() + i * interval '1 microsecond', (random() * 1000)::int4, i % 50, i * 0.001, i from generate_series(1, ${rows}) i`
/** The server's cores: pgbench's share is small next to the server's for these statements (it only waits). */
const CORES = 2

/** Debian's pgbench drives the ingest (`apt-get install postgresql-client`); .ci/run installs it with postgresql. */
const PGBENCH = '/usr/bin/pgbench'

describe.runIf(selectedBackends().includes('postgres') && existsSync(PGBENCH))(
  'ingest ceilings against a real committed ingest (pgbench)',
  () => {
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

    const fresh = async () => {
      await database.exec('drop schema if exists walcost_demo cascade')
      await database.exec(fieldNotesSetup(200_000))
      await database.exec(`vacuum analyze ${TABLE}`)
    }

    it('estimates each case within 25% of what pgbench achieves, naming the limit that binds', async () => {
      await fresh()
      const url = database.url as string
      const calibration = await calibrateIngest({ db: url, table: TABLE, secondsPerRun: 2, cores: CORES })
      const leftover = await database.query(
        `select count(*)::int as n from pg_class where relname like 'walcost_scratch_%'`,
      )
      expect(leftover[0]?.n).toBe(0)
      const cost = await measureInsertCost({ db: url, table: TABLE, sql: insert(10_000) })
      expect(cost.timing.msPerRow).toBeGreaterThan(0)
      const commitMs = calibration.commitMs
      // The IOPS of this machine's disk are not measured: assumed those of the nvme preset.
      const storage = { ...calibration.storage, iops: STORAGE_PRESETS.nvme.iops }
      const script = join(tmpdir(), `walcost-ingest-${process.pid}.sql`)
      const cases: Array<Record<string, unknown>> = []
      for (const rowsPerCommit of [1, 100, 1_000]) {
        for (const connections of [1, 4]) {
          await fresh()
          await writeFile(script, `${insert(rowsPerCommit)};\n`)
          const { stdout } = await run(PGBENCH, [
            '-n',
            '-f',
            script,
            '-c',
            String(connections),
            '-j',
            String(connections),
            '-T',
            '5',
            url,
          ])
          const tps = Number(/tps = ([\d.]+)/.exec(stdout)?.[1])
          const ceiling = estimateIngestCeiling(cost, {
            storage,
            commitMs,
            cores: CORES,
            rowsPerCommit,
            connections,
          })
          cases.push({
            rowsPerCommit,
            connections,
            achieved: Math.round(tps * rowsPerCommit),
            estimate: Math.round(ceiling.maxRowsPerSec),
            ratio: Number((ceiling.maxRowsPerSec / (tps * rowsPerCommit)).toFixed(2)),
            binding: ceiling.bindingLimit,
          })
        }
      }
      console.log(JSON.stringify({ calibration, commitMs, timing: cost.timing, cases }, null, 1))
      for (const entry of cases) {
        expect.soft(entry.ratio, JSON.stringify(entry)).toBeGreaterThan(0.75)
        expect.soft(entry.ratio, JSON.stringify(entry)).toBeLessThan(1.25)
        expect
          .soft(entry.binding, JSON.stringify(entry))
          .toBe(entry.rowsPerCommit === 1 ? 'commit flush latency' : 'server CPU')
      }
    }, 600_000)
  },
)
