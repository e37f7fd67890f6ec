import { readdir, readFile } from 'node:fs/promises'
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

/** The machine's cores: the embedded PostgreSQL runs on them, beside the process that loads it. */
const CORES = availableParallelism()

/** The ways a measurement sends its rows; each is estimated from on its own. */
export const MEASUREMENT_METHODS = ['insert', 'multirow', 'copy'] as const
export type MeasurementMethod = (typeof MEASUREMENT_METHODS)[number]

/** Rows a measurement sends by each method: one INSERT a row takes longest, so it sends fewer. */
const MEASUREMENT_ROWS: Record<MeasurementMethod, number> = { insert: 20_000, multirow: 20_000, copy: 50_000 }

/** A ceiling estimated from a measurement by one method, against the run it plans. */
export interface IngestEstimate {
  estimate: number
  /** estimate / achieved */
  ratio: number
  binding: LimitName
}

export interface IngestCase {
  rowsPerCommit: number
  connections: number
  achieved: number
  /** The estimate from a measurement by each method: the same planned ingest (one COPY a commit). */
  byMethod: Record<MeasurementMethod, IngestEstimate>
  /** The highest of the three estimates over the lowest. */
  spread: number
}

/** Clock ticks a second in /proc (USER_HZ: 100 on every Linux build). */
const TICKS_PER_SECOND = 100

/** Fields of /proc/PID/stat from the third (state) on: the process's name before them may hold spaces. */
async function procStat(pid: number | string): Promise<string[] | null> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => null)
  return stat === null ? null : stat.slice(stat.lastIndexOf(')') + 2).split(' ')
}

/** CPU ticks the machine spent, and the postmaster with its children spent, so far. */
async function ticksSoFar(postmaster: number): Promise<{ machine: number; busy: number; server: number } | null> {
  const cpu = await readFile('/proc/stat', 'utf8').catch(() => null)
  const own = await procStat(postmaster)
  if (cpu === null || own === null) return null
  const counts = (cpu.split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number)
  const machine = counts.reduce((sum, count) => sum + count, 0)
  // idle and iowait
  const busy = machine - (counts[3] ?? 0) - (counts[4] ?? 0)
  // utime, stime and the reaped children's cutime, cstime (fields 14-17): backends that ended count there.
  let server = [11, 12, 13, 14].reduce((sum, index) => sum + Number(own[index] ?? 0), 0)
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await procStat(entry)
    if (stat && Number(stat[1]) === postmaster) server += Number(stat[11] ?? 0) + Number(stat[12] ?? 0)
  }
  return { machine, busy, server }
}

/**
 * Starts counting the CPU other processes take from the machine (a `yes` loop, other tests), and
 * returns what reads, at the end, the cores left to the server and this process: the machine's
 * less those. Other load takes cores the estimate would otherwise count as free (four connections
 * at one row a commit came out 1.78x with `yes` on one of two cores). Where /proc is not there
 * (not Linux), every core.
 */
async function coresLeft(url: string): Promise<() => Promise<number>> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  const [row] = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows
  // Read while the backend lives: its parent is the postmaster.
  const backend = row ? await procStat(row.pid) : null
  await client.end()
  const postmaster = Number(backend?.[1])
  const before = backend ? await ticksSoFar(postmaster) : null
  const ownBefore = process.cpuUsage()
  return async () => {
    const after = before ? await ticksSoFar(postmaster) : null
    if (!before || !after) return CORES
    const own = process.cpuUsage(ownBefore)
    const ownTicks = ((own.user + own.system) / 1e6) * TICKS_PER_SECOND
    const others = after.busy - before.busy - (after.server - before.server) - ownTicks
    return Math.min(CORES, Math.max(1, CORES - (CORES * others) / (after.machine - before.machine)))
  }
}

/**
 * The real ingest (calibrateIngest's committed COPYs of 1, 100 and 1,000 rows from 1 and 4
 * connections, on a scratch copy of the table, each the median of `rounds` rounds), then each run's
 * estimates from what a user has before planning: a measurement of the same table by each method
 * (one INSERT a row, multi-row INSERTs, COPY; each the median of `rounds`, as a slow spell of a
 * shared machine can slow one), planned as the runs send their rows, the storage's flush time
 * fitted by the calibration (calibrateStorage's average beside it), the cores the server and this
 * process had over the runs (the machine's, less what other processes took), and the calibration's
 * commit, client, grouping and insert-rate figures (the last from sessions that wait for no flush,
 * not from these runs).
 */
export async function ingestCases(
  url: string,
  table: string,
  { rounds = 3 }: { rounds?: number } = {},
): Promise<{
  cases: IngestCase[]
  calibration: IngestCalibration
  costs: Record<MeasurementMethod, InsertCost>
  fsyncMs: number
  cores: number
}> {
  const left = await coresLeft(url)
  const calibration = await calibrateIngest({ db: url, table, cores: CORES, rounds })
  const cores = await left()
  const costs = await medianMeasurements(url, table, rounds)
  const { fsyncMs } = await calibrateStorage({ db: url })
  const estimated = (cost: InsertCost, run: IngestCalibration['runs'][number]): IngestEstimate => {
    const ceiling = estimateIngestCeiling(cost, {
      // The flush as the calibration fitted it: a sync, plus the WAL written at its bandwidth.
      // calibrateStorage's fsyncMs is every flush's average, large commits' writes included.
      storage: calibration.storage,
      cores,
      rowsPerCommit: run.rowsPerCommit,
      // The real ingest sends each transaction's rows as one COPY.
      method: 'copy',
      connections: run.connections,
      commitMs: calibration.commitMs,
      clientMsPerRow: calibration.clientMsPerRow,
      clientMsPerCommit: calibration.clientMsPerCommit,
      commitsPerFlush: run.commitsPerFlush,
      insertRowsPerSec: calibration.parallelism.parallelRowsPerSec,
    })
    return {
      estimate: ceiling.maxRowsPerSec,
      ratio: ceiling.maxRowsPerSec / run.rowsPerSec,
      binding: ceiling.bindingLimit,
    }
  }
  const cases = calibration.runs.map((run): IngestCase => {
    const byMethod = {} as Record<MeasurementMethod, IngestEstimate>
    for (const method of MEASUREMENT_METHODS) byMethod[method] = estimated(costs[method], run)
    const estimates = Object.values(byMethod).map((entry) => entry.estimate)
    return {
      rowsPerCommit: run.rowsPerCommit,
      connections: run.connections,
      achieved: run.rowsPerSec,
      byMethod,
      spread: Math.max(...estimates) / Math.min(...estimates),
    }
  })
  return { cases, calibration, costs, fsyncMs, cores }
}

/**
 * `rounds` measurements of the table by each method, each after a vacuum (the rows a measurement
 * rolls back stay in the indexes until one), and each method's of median time a row. The methods
 * take turns, so that a slow spell of a shared machine slows one round of each, not one method's.
 */
async function medianMeasurements(
  url: string,
  table: string,
  rounds: number,
): Promise<Record<MeasurementMethod, InsertCost>> {
  const measured = { insert: [], multirow: [], copy: [] } as Record<MeasurementMethod, InsertCost[]>
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    const quoted = table
      .split('.')
      .map((part) => client.escapeIdentifier(part))
      .join('.')
    for (let i = 0; i < rounds; i++) {
      for (const method of MEASUREMENT_METHODS) {
        await client.query(`vacuum ${quoted}`)
        measured[method].push(await measureInsertCost({ db: url, table, count: MEASUREMENT_ROWS[method], method }))
      }
    }
  } finally {
    await client.end()
  }
  const median = (costs: InsertCost[]) =>
    [...costs].sort((a, b) => (a.timing.msPerRow ?? 0) - (b.timing.msPerRow ?? 0))[Math.floor(rounds / 2)] as InsertCost
  return { insert: median(measured.insert), multirow: median(measured.multirow), copy: median(measured.copy) }
}
