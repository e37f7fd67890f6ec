import { availableParallelism } from 'node:os'
import pg from 'pg'
import {
  calibrateIngest,
  calibrateStorage,
  estimateIngestCeiling,
  type IngestCalibration,
  type InsertCost,
  type LimitName,
  measureInsertCost,
} from '../../src/index.js'

/** The server's cores: the embedded PostgreSQL runs on this machine, beside the process that loads it. */
export const CORES = availableParallelism()

export interface IngestCase {
  rowsPerCommit: number
  connections: number
  achieved: number
  estimate: number
  /** estimate / achieved */
  ratio: number
  binding: LimitName
}

/**
 * The real ingest (calibrateIngest's committed COPYs of 1, 100 and 1,000 rows from 1 and 4
 * connections, on a scratch copy of the table, each the median of three rounds), then each run's
 * estimate from what a user has before planning: a measurement of the same table the same way
 * (COPY; the median of three, as a slow spell of a shared machine can slow one), the storage's flush time
 * fitted by the calibration (calibrateStorage's average beside it), the server's cores, and the calibration's commit, client, grouping and
 * insert-rate figures (the last from sessions that wait for no flush, not from these runs).
 */
export async function ingestCases(
  url: string,
  table: string,
): Promise<{ cases: IngestCase[]; calibration: IngestCalibration; cost: InsertCost; fsyncMs: number }> {
  const calibration = await calibrateIngest({ db: url, table, cores: CORES })
  const cost = await medianMeasurement(url, table)
  const { fsyncMs } = await calibrateStorage({ db: url })
  const cases = calibration.runs.map((run): IngestCase => {
    const ceiling = estimateIngestCeiling(cost, {
      // The flush as the calibration fitted it: a sync, plus the WAL written at its bandwidth.
      // calibrateStorage's fsyncMs is every flush's average, large commits' writes included.
      storage: calibration.storage,
      cores: CORES,
      rowsPerCommit: run.rowsPerCommit,
      connections: run.connections,
      commitMs: calibration.commitMs,
      clientMsPerRow: calibration.clientMsPerRow,
      clientMsPerCommit: calibration.clientMsPerCommit,
      commitsPerFlush: run.commitsPerFlush,
      insertRowsPerSec: calibration.parallelism.parallelRowsPerSec,
    })
    return {
      rowsPerCommit: run.rowsPerCommit,
      connections: run.connections,
      achieved: run.rowsPerSec,
      estimate: ceiling.maxRowsPerSec,
      ratio: ceiling.maxRowsPerSec / run.rowsPerSec,
      binding: ceiling.bindingLimit,
    }
  })
  return { cases, calibration, cost, fsyncMs }
}

/**
 * Three measurements of the table, each after a vacuum (the rows a measurement rolls back stay in
 * the indexes until one), and the one of median time a row.
 */
async function medianMeasurement(url: string, table: string): Promise<InsertCost> {
  const costs: InsertCost[] = []
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const quoted = table
      .split('.')
      .map((part) => client.escapeIdentifier(part))
      .join('.')
    for (let i = 0; i < 3; i++) {
      await client.query(`vacuum ${quoted}`)
      costs.push(await measureInsertCost({ db: url, table, count: 50_000, method: 'copy' }))
    }
  } finally {
    await client.end()
  }
  costs.sort((a, b) => (a.timing.msPerRow ?? 0) - (b.timing.msPerRow ?? 0))
  return costs[1] as InsertCost
}
