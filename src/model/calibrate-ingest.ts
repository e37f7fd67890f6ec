import { z } from 'zod'
import { buildScratchCopy, refillScratchCopy, scratchCopyFitness } from '../compare/scratch.js'
import {
  DEFAULT_CALIBRATION_CONNECTIONS,
  DEFAULT_CALIBRATION_ROUNDS,
  DEFAULT_CALIBRATION_ROWS_PER_COMMIT,
  DEFAULT_CALIBRATION_SECONDS,
  DEFAULT_CALIBRATION_STORAGE,
  DEFAULT_SAMPLE_ROWS,
} from '../core/defaults.js'
import { fromServerError, throwIfAborted, WalcostError } from '../core/errors.js'
import { counted, integer } from '../core/format.js'
import { connectionOptionsSchema, parseOptions, sessionLimits } from '../core/options.js'
import { withSession } from '../driver/open.js'
import type { Session } from '../driver/types.js'
import { prepareBatch, runBatch } from '../measure/batch.js'
import { resolveTable, type Table } from '../measure/catalog.js'
import { readSyntheticStart, type SyntheticStart, syntheticColumns } from '../measure/synthetic.js'
import { readCapabilities } from '../wal/server.js'
import { readWalFlushes, type WalFlushView } from './calibrate.js'
import { estimateIngestCeiling, type LimitName, STORAGE_PRESETS, type Storage, storageSchema } from './ceiling.js'

/** How far an estimate may be from its run before the calibration says to plan from the run. */
const TRUSTED_ERROR = 0.25

/**
 * Rows a COPY (and a commit) while parallelism is measured: so many that a session's time is its
 * rows', hardly its round trips' and its flushes'.
 */
const PARALLELISM_ROWS_PER_COPY = 5_000

/**
 * Options of {@link calibrateIngest}.
 *
 * @example
 * const options: CalibrateIngestOptions = { db: process.env.DATABASE_URL, table: 'device_metrics', cores: 2 }
 */
export const calibrateIngestOptionsSchema = connectionOptionsSchema
  .extend({
    table: z.string().min(1).describe('the table to copy and ingest into (the copy is dropped afterwards)'),
    rowsPerCommit: z
      .array(z.number().int().positive().max(100_000))
      .min(2, {
        error:
          'give at least two sizes, e.g. [1, 100]: the time a row and the time a commit are told apart by how runs of different sizes differ',
      })
      .default([...DEFAULT_CALIBRATION_ROWS_PER_COMMIT])
      .describe('rows a transaction in the runs (at least two sizes: the time a row and a commit follow from them)'),
    connections: z
      .array(z.number().int().positive().max(64))
      .min(1)
      .default([...DEFAULT_CALIBRATION_CONNECTIONS])
      .describe('sessions inserting at once in the runs; 1 must be among them'),
    secondsPerRun: z
      .number()
      .positive()
      .max(60)
      .default(DEFAULT_CALIBRATION_SECONDS)
      .describe('how long each run commits rows'),
    rounds: z
      .number()
      .int()
      .min(1)
      .max(9)
      .default(DEFAULT_CALIBRATION_ROUNDS)
      .describe(
        "times every run is repeated, in turn: each run's median is kept, so a slow spell of the machine slows one",
      ),
    sampleRows: z
      .number()
      .int()
      .min(0)
      .default(DEFAULT_SAMPLE_ROWS)
      .describe("real rows copied into the scratch table, so its indexes have the table's depth"),
    cores: z.number().positive().optional().describe("the server's cores for its sessions, for the estimates"),
    storage: z
      .union([z.enum(Object.keys(STORAGE_PRESETS) as [keyof typeof STORAGE_PRESETS]), storageSchema])
      .default(DEFAULT_CALIBRATION_STORAGE)
      .describe('where the IOPS of the estimates come from (flush time and bandwidth are measured)'),
  })
  .strict()

export type CalibrateIngestOptions = z.input<typeof calibrateIngestOptionsSchema>

/** One run of the calibration: committed inserts at one size and connection count, and the model's estimate of it. */
export interface IngestRun {
  rowsPerCommit: number
  connections: number
  seconds: number
  rows: number
  commits: number
  /** WAL flushes the server timed over the run (every session's). */
  flushes: number
  rowsPerSec: number
  /** WAL a row over the run, every record of the cluster included (full-page images, commits). */
  bytesPerRow: number
  /** Average time of a flush over the run. */
  flushMs: number
  /** Commits a flush carried: how commits grouped. */
  commitsPerFlush: number
  /** A connection's time a transaction, its commit's flush included, as the client saw it. */
  transactionMs: number
  /** This process's CPU a transaction (making and sending the rows): the load generator's share of the cores. */
  clientCpuMs: number
  /** estimateIngestCeiling for this run, from the calibrated figures. */
  estimatedRowsPerSec: number
  bindingLimit: LimitName
  /** estimatedRowsPerSec / rowsPerSec. */
  ratio: number
}

/** Sessions inserting in commits so large their flushes hardly count: one, and `connections` at once. */
export interface Parallelism {
  connections: number
  singleRowsPerSec: number
  parallelRowsPerSec: number
  /** parallelRowsPerSec / singleRowsPerSec. */
  speedup: number
}

export interface IngestCalibration {
  kind: 'ingest-calibration'
  /** The table as resolved: schema-qualified and quoted. */
  table: string
  /** Measured: fsyncMs (a flush carrying almost no WAL) and writeMBps (the WAL a flush writes); IOPS as given. */
  storage: Storage
  /**
   * From the single-connection runs: a connection's time a row less its load generator's CPU a row
   * (the server's, as the model adds the two), and a transaction's time beyond its rows and flush.
   */
  msPerRow: number
  commitMs: number
  /**
   * This process's CPU a row (making and encoding the rows) and a transaction (starting and ending
   * its COPY) on the cores the server shares with it; commitMs is the rest of a transaction's time.
   */
  clientMsPerRow: number
  clientMsPerCommit: number
  cores: number | null
  /** How fast one session and several at once insert into the table in large commits (medians of the rounds). */
  parallelism: Parallelism
  /** Times every run was made: each of `runs` is the run of median rate among them. */
  rounds: number
  runs: IngestRun[]
  /** The largest distance of an estimate from its run: max |ratio - 1|. */
  worstError: number
  notes: string[]
}

/**
 * A short real ingest on a scratch copy of the table: committed transactions of synthetic rows at
 * each rowsPerCommit and connection count, for secondsPerRun each, then the copy is dropped. Returns
 * what estimateIngestCeiling needs for this server (flush time and bandwidth, server time a row and a
 * commit, how commits group) and how far its estimate was from each run.
 *
 * @example
 * const calibration = await calibrateIngest({ db: process.env.DATABASE_URL, table: 'device_metrics', cores: 2 })
 */
export async function calibrateIngest(options: CalibrateIngestOptions): Promise<IngestCalibration> {
  const parsed = parseOptions(calibrateIngestOptionsSchema, options)
  if (!parsed.connections.includes(1)) {
    throw new WalcostError(
      'INVALID_OPTIONS',
      'connections: include 1 (the time a row and a commit come from the single-connection runs).',
      {
        field: 'connections',
      },
    )
  }
  return withSession(parsed.db, sessionLimits(parsed), parsed.signal, 'calibrating', async (session) => {
    if (session.backend !== 'pg' || !session.openSibling) {
      throw new WalcostError(
        'UNSUPPORTED_SERVER',
        'calibrateIngest opens several connections to a real server and commits on a scratch copy: give db as a connection string or a pg Pool (not PGlite, not a single Client).',
        { field: 'db' },
      )
    }
    const { view } = await readWalFlushes(session)
    const table = await resolveTable(session, parsed.table)
    const fitness = await scratchCopyFitness(session, table)
    if (fitness.refusal) throw new WalcostError('PERMISSION_DENIED', `calibrateIngest: ${fitness.refusal}.`)
    if (syntheticColumns(table).length === 0) {
      throw new WalcostError(
        'UNSUPPORTED_TABLE',
        `every column of ${table.quoted} is filled by the server: calibrateIngest has no rows to make.`,
      )
    }
    // Committed, so that every connection sees it; dropped in the finally below, on a fresh
    // connection should this one have failed.
    await session.exec('begin')
    let copy: Table
    try {
      const built = await buildScratchCopy(session, table, parsed.sampleRows)
      // The runs insert hundreds of thousands of rows: autovacuum would start on the copy midway
      // and take the cores from the later runs alone.
      await session.exec(`alter table ${built.quoted} set (autovacuum_enabled = off)`)
      await session.exec('commit')
      copy = await resolveTable(session, built.quoted)
    } catch (error) {
      await session.exec('rollback').catch(() => undefined)
      throw error
    }
    try {
      return await calibrateOn(session, view, table, copy, parsed, fitness.gaps)
    } finally {
      await dropCopy(session, copy.quoted)
    }
  })
}

type Parsed = z.output<typeof calibrateIngestOptionsSchema>

async function dropCopy(session: Session, quoted: string): Promise<void> {
  const drop = `drop table if exists ${quoted} cascade`
  try {
    await session.exec(drop)
  } catch {
    const other = await session.openSibling?.().catch(() => null)
    if (!other) return
    try {
      await other.exec(drop)
    } finally {
      await other.close()
    }
  }
}

interface Counters {
  flushes: number
  /** fsync and write time of the WAL so far, ms. */
  flushMs: number
  commits: number
  walBytes: number
}

async function readCounters(session: Session, view: WalFlushView): Promise<Counters> {
  const flushes = await readWalFlushes(session, view)
  const [row] = await session.query<{ commits: string; wal: string }>(
    `select (select xact_commit from pg_stat_database where datname = current_database())::text as commits,
            (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as wal`,
  )
  return {
    flushes: flushes.flushes,
    flushMs: flushes.ms + flushes.writeMs,
    commits: Number(row?.commits),
    walBytes: Number(row?.wal),
  }
}

/** What one timed ingest did: its batches of rows, over how long, and the workers' time in them. */
interface Ingested {
  seconds: number
  batches: number
  rows: number
  busyMs: number
}

/**
 * The workers COPY from one stream of synthetic rows, `rowsPerBatch` rows a COPY, until the run's
 * time is up: in autocommit one COPY is one transaction, as a bulk loader sends them. One stream,
 * so that no two workers send the same key: a unique integer or time column counts up from the
 * table's highest value whatever the stream's seed.
 */
async function ingest(
  workers: Session[],
  copy: Table,
  start: SyntheticStart,
  parsed: Parsed,
  rowsPerBatch: number,
): Promise<Ingested> {
  const options = { method: 'copy' as const, batchSize: rowsPerBatch, signal: parsed.signal }
  // The rows' start is given: making them asks the server nothing.
  const series = await prepareBatch(workers[0] as Session, copy, { ...options, count: Number.MAX_SAFE_INTEGER }, start)
  const rows = series.values()[Symbol.asyncIterator]()
  const batch = { ...series, values: () => take(rows, rowsPerBatch) }
  const began = performance.now()
  const deadline = began + parsed.secondsPerRun * 1_000
  const counts = await Promise.all(
    workers.map(async (worker) => {
      let done = 0
      let busy = 0
      try {
        while (performance.now() < deadline) {
          throwIfAborted(parsed.signal)
          const sent = performance.now()
          await runBatch(worker, copy, batch, options, done)
          busy += performance.now() - sent
          done++
        }
      } catch (error) {
        throw fromServerError(error, 'committing a calibration batch on the scratch copy', 'BATCH_FAILED')
      }
      return { done, busy }
    }),
  )
  const batches = counts.reduce((sum, count) => sum + count.done, 0)
  return {
    seconds: (performance.now() - began) / 1_000,
    batches,
    rows: batches * rowsPerBatch,
    busyMs: counts.reduce((sum, count) => sum + count.busy, 0),
  }
}

/** The item of median `by` (the upper of the two middle ones for an even count). */
function middle<T>(items: T[], by: (item: T) => number): T {
  const sorted = [...items].sort((a, b) => by(a) - by(b))
  return sorted[Math.floor(sorted.length / 2)] as T
}

async function calibrateOn(
  session: Session,
  view: WalFlushView,
  table: Table,
  copy: Table,
  parsed: Parsed,
  gaps: string[],
): Promise<IngestCalibration> {
  const start = await readSyntheticStart(session, copy)
  const capabilities = await readCapabilities(session)
  // Every run starts from the copy as built: rows the runs before added would slow it alone. A
  // CHECKPOINT then writes out what the refill and the run before dirtied, so that writing it back
  // does not slow this run's flushes, and no checkpoint that the WAL of the runs before calls for
  // starts midway through it.
  const refill = async () => {
    await refillScratchCopy(session, table, copy.quoted, parsed.sampleRows)
    if (capabilities.checkpoint) await session.exec('checkpoint')
  }
  const ingestFrom = async (connections: number, rowsPerBatch: number) => {
    const workers = await openWorkers(session, connections)
    try {
      return await ingest(workers, copy, start, parsed, rowsPerBatch)
    } finally {
      // Closing publishes each worker's statistics (commits, flushes) before they are read.
      await Promise.all(workers.map((worker) => worker.close().catch(() => undefined)))
    }
  }
  // A run at one size and connection count: its rate, and the server's counters around it.
  const timedRun = async (rowsPerCommit: number, connections: number): Promise<MeasuredRun> => {
    const before = await readCounters(session, view)
    const cpuBefore = process.cpuUsage()
    const run = await ingestFrom(connections, rowsPerCommit)
    const cpu = process.cpuUsage(cpuBefore)
    const after = await settledCounters(session, view, before)
    const flushes = after.flushes - before.flushes
    const commits = after.commits - before.commits
    const { seconds, rows, batches } = run
    return {
      rowsPerCommit,
      connections,
      seconds,
      rows,
      commits,
      flushes,
      rowsPerSec: rows / seconds,
      bytesPerRow: rows > 0 ? (after.walBytes - before.walBytes) / rows : 0,
      flushMs: flushes > 0 ? (after.flushMs - before.flushMs) / flushes : 0,
      commitsPerFlush: flushes > 0 ? Math.max(1, commits / flushes) : 1,
      transactionMs: run.busyMs / Math.max(1, batches),
      clientCpuMs: (cpu.user + cpu.system) / 1_000 / Math.max(1, batches),
    }
  }
  const most = Math.max(...parsed.connections)
  // Each round runs everything once, so that a slow spell of a shared machine slows one run of
  // each kind, not every run of one; the median of the rounds is kept.
  const probes: Array<{ single: number; parallel: number }> = []
  const rounds: MeasuredRun[][] = []
  for (let round = 0; round < parsed.rounds; round++) {
    // One session and the most at once in commits so large that their flushes hardly count: where
    // sessions contend inside the server (the same heap and index pages, WAL insertion) they reach
    // less than the cores allow, which a single session's measurement cannot show.
    const rates = []
    for (const count of [1, most]) {
      throwIfAborted(parsed.signal)
      await refill()
      const run = await ingestFrom(count, PARALLELISM_ROWS_PER_COPY)
      rates.push(run.rows / run.seconds)
    }
    probes.push({ single: rates[0] ?? 0, parallel: rates[1] ?? 0 })
    const measured: MeasuredRun[] = []
    for (const rowsPerCommit of parsed.rowsPerCommit) {
      for (const connections of parsed.connections) {
        throwIfAborted(parsed.signal)
        await refill()
        measured.push(await timedRun(rowsPerCommit, connections))
      }
    }
    rounds.push(measured)
  }
  const single = middle(probes, (probe) => probe.single).single
  const parallel = middle(probes, (probe) => probe.parallel).parallel
  const parallelism: Parallelism = {
    connections: most,
    singleRowsPerSec: single,
    parallelRowsPerSec: parallel,
    speedup: single > 0 ? parallel / single : 1,
  }
  // Each case's run of median rate, whole: its flushes, grouping and times belong together.
  const measured = (rounds[0] ?? []).map((_, index) =>
    middle(
      rounds.map((round) => round[index] as MeasuredRun),
      (run) => run.rowsPerSec,
    ),
  )
  const fitted = fitIngestRuns(measured, parallelism, parsed.storage, parsed.cores ?? null, table.quoted)
  const { storage, msPerRow, commitMs, clientMsPerRow, clientMsPerCommit, runs } = fitted
  return {
    kind: 'ingest-calibration',
    table: table.quoted,
    storage,
    msPerRow,
    commitMs,
    clientMsPerRow,
    clientMsPerCommit,
    cores: parsed.cores ?? null,
    parallelism,
    rounds: parsed.rounds,
    runs,
    worstError: Math.max(...runs.map((run) => Math.abs(run.ratio - 1))),
    notes: [
      ...gaps.map((gap) => `Not in the runs: ${gap}.`),
      ...(capabilities.checkpoint
        ? []
        : [
            "No CHECKPOINT before each run (it needs superuser or, on PostgreSQL 15+, pg_checkpoint): the writing back of the runs before, and checkpoints the runs' WAL calls for, can slow a run's flushes. GRANT pg_checkpoint TO the role for steadier runs.",
          ]),
      `${parallelism.connections} sessions committing ${integer(PARALLELISM_ROWS_PER_COPY)} rows at a time inserted ${integer(parallelism.parallelRowsPerSec)} rows/s into the copy, one session ${integer(parallelism.singleRowsPerSec)} (${parallelism.speedup.toFixed(2)}x; medians of ${counted(parsed.rounds, 'round')}): the estimates take ${integer(parallelism.parallelRowsPerSec)} rows/s as the most sessions inserting at once reach (insertRowsPerSec).`,
      "The runs COPY synthetic rows from this process, one COPY a transaction: its CPU a row and a transaction are clientMsPerRow and clientMsPerCommit (0 in an estimate for clients that run elsewhere), the round trips and the server's work a transaction commitMs.",
      ...runs
        .filter((run) => Math.abs(run.ratio - 1) > TRUSTED_ERROR)
        .map(
          (run) =>
            `At ${counted(run.rowsPerCommit, 'row')} a commit from ${counted(run.connections, 'connection')} the estimate was ${run.ratio.toFixed(2)}x the run: plan from the run there.`,
        ),
    ],
  }
}

/** What a run measured, before the model's estimate of it. */
export type MeasuredRun = Omit<IngestRun, 'estimatedRowsPerSec' | 'bindingLimit' | 'ratio'>

/**
 * The figures the model needs, fitted from the runs, and each run's estimate from them: apart from
 * the runs themselves so that recorded runs can be fitted again.
 */
export function fitIngestRuns(
  measured: MeasuredRun[],
  parallelism: Parallelism,
  storageGiven: Parsed['storage'],
  cores: number | null,
  tableName: string,
): Pick<IngestCalibration, 'storage' | 'msPerRow' | 'commitMs' | 'clientMsPerRow' | 'clientMsPerCommit' | 'runs'> {
  const single = measured.filter((run) => run.connections === 1)
  // A flush's time grows with the WAL it writes: fsyncMs where it writes almost none, writeMBps its slope.
  const flush = fitLine(single.map((run) => [run.rowsPerCommit * run.bytesPerRow, run.flushMs]))
  const base = typeof storageGiven === 'string' ? STORAGE_PRESETS[storageGiven] : storageGiven
  const fsyncMs = Math.max(flush.intercept, Math.min(...single.map((run) => run.flushMs)) / 2)
  const writeMBps = flush.slope > 0 ? 1 / (flush.slope * 1_000) : base.writeMBps
  // This process makes and encodes the rows, and starts and ends each COPY: its CPU a row and a
  // transaction is taken from the cores the sessions share.
  const client = fitLine(single.map((run) => [run.rowsPerCommit, run.clientCpuMs]))
  const clientMsPerRow = Math.max(0, client.slope)
  const clientMsPerCommit = Math.max(0, client.intercept)
  // What a connection does besides waiting for its flush: a time a row, and a commit's. The model
  // adds the load generator's to the server's, so the server's are the rest.
  const connection = fitLine(single.map((run) => [run.rowsPerCommit, Math.max(0, run.transactionMs - run.flushMs)]))
  const msPerRow = Math.max(connection.slope - clientMsPerRow, Number.MIN_VALUE)
  const commitMs = Math.max(0, connection.intercept - clientMsPerCommit)
  // The disk took every flush of the runs: its IOPS are at least their highest rate.
  const flushRate = Math.max(...measured.map((run) => run.flushes / run.seconds))
  const storage: Storage = {
    writeMBps,
    iops: Math.max(base.iops, flushRate),
    fsyncMs,
    source: `calibrated on ${tableName}'s scratch copy: flush time and bandwidth from ${single.length} single-connection runs (pg_stat_io or pg_stat_wal); IOPS from ${typeof storageGiven === 'string' ? storageGiven : 'the storage given'}, or the runs' own flush rate where higher`,
  }
  const runs = measured.map((run): IngestRun => {
    const estimate = estimateIngestCeiling(
      { bytesPerRow: run.bytesPerRow || 1, msPerRow },
      {
        storage,
        rowsPerCommit: run.rowsPerCommit,
        connections: run.connections,
        commitMs,
        clientMsPerRow,
        clientMsPerCommit,
        commitsPerFlush: run.commitsPerFlush,
        insertRowsPerSec: parallelism.parallelRowsPerSec,
        ...(cores === null ? {} : { cores }),
      },
    )
    return {
      ...run,
      estimatedRowsPerSec: estimate.maxRowsPerSec,
      bindingLimit: estimate.bindingLimit,
      ratio: run.rowsPerSec > 0 ? estimate.maxRowsPerSec / run.rowsPerSec : Number.NaN,
    }
  })
  return { storage, msPerRow, commitMs, clientMsPerRow, clientMsPerCommit, runs }
}

async function openWorkers(session: Session, count: number): Promise<Session[]> {
  const workers: Session[] = []
  try {
    for (let i = 0; i < count; i++) {
      const worker = await session.openSibling?.()
      if (!worker) {
        throw new WalcostError(
          'CONNECTION_FAILED',
          `calibrateIngest needs ${count} connections at once beside its own: give a connection string, or a Pool with room for them.`,
          { field: 'db' },
        )
      }
      workers.push(worker)
    }
    return workers
  } catch (error) {
    await Promise.all(workers.map((worker) => worker.close().catch(() => undefined)))
    throw error
  }
}

/**
 * The counters once the closed workers' statistics are in: a backend publishes them as it exits,
 * a moment after its connection closes. Bounded: after two seconds the counters are taken as they are.
 */
async function settledCounters(session: Session, view: WalFlushView, before: Counters): Promise<Counters> {
  let last = await readCounters(session, view)
  for (let wait = 0; wait < 20; wait++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    const now = await readCounters(session, view)
    if (now.commits === last.commits && now.flushes === last.flushes && now.commits > before.commits) return now
    last = now
  }
  return last
}

/** The next `count` values of a stream that goes on. */
async function* take<T>(source: AsyncIterator<T>, count: number): AsyncGenerator<T> {
  for (let i = 0; i < count; i++) {
    const next = await source.next()
    if (next.done) return
    yield next.value
  }
}

/** Least squares through the points; a single point gives a line through the origin's level. */
function fitLine(points: Array<[number, number]>): { slope: number; intercept: number } {
  const n = points.length
  const mean = (pick: (point: [number, number]) => number) => points.reduce((sum, point) => sum + pick(point), 0) / n
  const mx = mean((point) => point[0])
  const my = mean((point) => point[1])
  const sxx = points.reduce((sum, [x]) => sum + (x - mx) ** 2, 0)
  if (sxx === 0) return { slope: 0, intercept: my }
  const slope = points.reduce((sum, [x, y]) => sum + (x - mx) * (y - my), 0) / sxx
  return { slope, intercept: my - slope * mx }
}
