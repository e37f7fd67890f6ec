import { availableParallelism } from 'node:os'
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
 * connections, on a scratch copy of the table), then each run's estimate from what a user has
 * before planning: a measurement of the same table the same way (COPY), the storage's flush time
 * fitted by the calibration (calibrateStorage's average beside it), the server's cores, and the calibration's commit, client, grouping and
 * insert-rate figures (the last from sessions that wait for no flush, not from these runs).
 */
export async function ingestCases(
  url: string,
  table: string,
): Promise<{ cases: IngestCase[]; calibration: IngestCalibration; cost: InsertCost; fsyncMs: number }> {
  const calibration = await calibrateIngest({ db: url, table, cores: CORES })
  const cost = await measureInsertCost({ db: url, table, count: 50_000, method: 'copy' })
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
