import { z } from 'zod'
import type { Database } from '../core/database.js'
import {
  COMMITS_MEASURED,
  DEFAULT_BATCH_SIZES,
  DEFAULT_COMPRESSION,
  DEFAULT_TARGET_ROWS_PER_SEC,
} from '../core/defaults.js'
import { sqlStateOf } from '../core/errors.js'
import { counted } from '../core/format.js'
import {
  batchOptionsSchema,
  exactlyOneBatch,
  parseOptions,
  replayableRows,
  type WithDatabase,
} from '../core/options.js'
import { rolledBack } from '../driver/rolled-back.js'
import type { Session } from '../driver/types.js'
import { resolveTable, type Table } from '../measure/catalog.js'
import { onDatabase } from '../measure/lifecycle.js'
import type { Breakdown, InsertCost } from '../measure/result.js'
import { readSyntheticStart } from '../measure/synthetic.js'
import { type CommitCost, measureCommits } from '../wal/commits.js'
import { readServer } from '../wal/server.js'
import { meterServerCost, type ServerCost } from '../wal/snapshot.js'
import {
  aaCheck,
  type ComparableRuns,
  type Comparison,
  comparableOptionsShape,
  comparableRuns,
  givenNamesTable,
  measureOn,
  type RunChanges,
  steadyOn,
} from './comparable.js'
import { dropCandidates, minStatsAgeDaysSchema } from './index-usage.js'
import { startingNotes } from './scenarios.js'

/**
 * Options of {@link compareRemedies}: the batch, as for measureInsertCost, and what to try.
 *
 * @example
 * const options: RemediesOptions = { table: 'device_metrics', count: 100_000, targetRowsPerSec: 50_000 }
 */
export const remediesOptionsSchema = batchOptionsSchema
  .extend({
    ...comparableOptionsShape,
    batchSizes: z
      .array(z.number().int().min(2).max(100_000))
      .min(1)
      .default(DEFAULT_BATCH_SIZES)
      .describe('multi-row INSERT sizes to try'),
    dropIndexes: z
      .array(z.string().min(1))
      .optional()
      .describe('indexes to try without (default: the drop candidates auditIndexes finds)'),
    minStatsAgeDays: minStatsAgeDaysSchema,
    compression: z
      .array(z.enum(['pglz', 'lz4', 'zstd']))
      .min(1)
      .default([...DEFAULT_COMPRESSION])
      .describe('wal_compression methods to try'),
    targetRowsPerSec: z
      .number()
      .positive()
      .default(DEFAULT_TARGET_ROWS_PER_SEC)
      .describe('ingest rate that sets how many rows fall between checkpoints'),
  })
  .superRefine(exactlyOneBatch)
  .superRefine(replayableRows('the remedies'))

export type RemediesOptions<Db extends Database | undefined = Database | undefined> = WithDatabase<
  z.input<typeof remediesOptionsSchema>,
  Db
>
type ParsedRemediesOptions = z.output<typeof remediesOptionsSchema>
/** What a remedy's run changes: the measurement's options, and for the spacing curve the batch size. */
type Remedial = Partial<RunChanges> & { count?: number }

/** The field notes' four remedies, by increasing risk. */
export type RemedyKind = 'batching' | 'drop-indexes' | 'wal-compression' | 'checkpoint-spacing'

export interface Remedy {
  name: string
  kind: RemedyKind
  /** 1 (batching) to 4 (fewer checkpoints), the field notes' order of risk. */
  risk: 1 | 2 | 3 | 4
  /** The measurement, where the remedy was measured (not for checkpoint spacing, which is derived). */
  cost: InsertCost | null
  bytesPerRow: number | null
  /** Saving against the baseline (checkpoint spacing: against the current spacing), percent. */
  savingPct: number | null
  /** Time of the measurement over the baseline's: what the remedy costs in CPU (compression). */
  timeRatio: number | null
  measured: boolean
  available: boolean
  /** What to change, and what it costs besides bytes. */
  how: string
}

export interface SpacingPoint {
  /** Rows written between two checkpoints. */
  rowsBetweenCheckpoints: number
  bytesPerRow: number
  measured: boolean
}

/** The batch at one commit size: its WAL a row, and the WAL writes and fsyncs a row its commits cause. */
export interface CommitPoint {
  rowsPerCommit: number
  bytesPerRow: number
  /** null where the role may not count them (see the cost's countsNote). */
  writesPerRow: number | null
  syncsPerRow: number | null
}

/** Rows per commit: what each commit adds (measured with real commits), applied to the batch. */
export interface CommitSizes {
  cost: CommitCost
  points: CommitPoint[]
}

export interface RemedyComparison extends Comparison {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'remedies'
  /** The batch as given, right after a checkpoint. */
  baseline: InsertCost
  /** The same batch with pages already dirty: the floor that longer checkpoint spacing tends to. */
  steady: InsertCost
  /** Ordered by saving, the unavailable last. */
  remedies: Remedy[]
  /** WAL per row against rows between checkpoints: measured up to the batch, derived beyond. */
  checkpointSpacing: SpacingPoint[]
  /**
   * Rows per commit (1, 10, 100, 1,000): the baseline's WAL a row plus what each commit adds, from
   * real commits of transactions that only take a transaction id (nothing persists).
   */
  commitSizes: CommitSizes
  /** What the runs cost the server; null on PGlite, where they ran on clones. */
  serverCost: ServerCost | null
}

/** How each run started, as far as its checkpoint goes: never a CHECKPOINT that was skipped. */
const afterCheckpoint = (checkpointed: boolean) =>
  checkpointed ? 'right after its own checkpoint like the baseline' : 'like the baseline, its CHECKPOINT skipped'

const fromIdenticalStates = (checkpointed: boolean) =>
  `Each run started from an identical state, ${afterCheckpoint(checkpointed)}: a remedy's cost and saving are its own measurement, and the A/A check (the baseline measured again) shows how exactly runs repeat.`

const partByPart = (checkpointed: boolean) =>
  `Each remedy ran ${afterCheckpoint(checkpointed)}. Its saving replaces only the part it changes (heap records for batching, the dropped indexes, the size of an image for wal_compression) in the baseline: every run is rolled back but leaves dead rows and index entries, so later runs touch more pages, and whole runs would not compare.`

/** The field notes' order of risk: each kind has its own. */
const RISK: Record<RemedyKind, Remedy['risk']> = {
  batching: 1,
  'drop-indexes': 2,
  'wal-compression': 3,
  'checkpoint-spacing': 4,
}

/** A remedy that could not be measured here, and why. */
const unavailable = (name: string, kind: RemedyKind, how: string): Remedy => ({
  name,
  kind,
  risk: RISK[kind],
  cost: null,
  bytesPerRow: null,
  savingPct: null,
  timeRatio: null,
  measured: false,
  available: false,
  how,
})

const pct = (from: number, to: number) => (from > 0 ? (100 * (from - to)) / from : 0)

/** compareRemedies without the notebook display; the exported entry point is in api.ts. */
export async function compareRemedies(options: RemediesOptions): Promise<RemedyComparison> {
  const parsed = parseOptions(remediesOptionsSchema, options)
  return onDatabase(parsed, (session) => remediesOnSession(session, parsed))
}

async function remediesOnSession(session: Session, options: ParsedRemediesOptions): Promise<RemedyComparison> {
  const table = await resolveTable(session, options.table)
  const syntheticStart = options.count !== undefined ? await readSyntheticStart(session, table) : undefined
  const comparable = await comparableRuns(session, table, {
    runsOn: options.runsOn,
    sampleRows: options.sampleRows,
    realTableNeeded: givenNamesTable(options),
  })
  const meter = comparable.startingState === 'clone' ? null : await meterServerCost(session)
  const measure = ({ count, ...changes }: Remedial = {}) =>
    comparable.run((target) =>
      measureOn(
        target,
        { ...options, ...(count !== undefined && { count }) },
        { checkpoint: true, dropIndexes: false, ...changes },
        syntheticStart,
      ),
    )
  const baseline = await measure()
  // Steady state: the batch on pages it already changed.
  const steady = await comparable.run((target) =>
    steadyOn(target, (on) => measureOn(on, options, { checkpoint: false, dropIndexes: false }, syntheticStart)),
  )
  const base = baseline.bytesPerRow ?? 0
  const runs: RemedyRuns = {
    session,
    table,
    options,
    comparable,
    measure,
    measured(name, kind, cost, how) {
      // From an identical state, a remedy's run differs from the baseline's only by the remedy: its own cost is the answer.
      const bytesPerRow =
        comparable.startingState === 'ordered' ? remedyBytesPerRow(kind, baseline, cost) : (cost.bytesPerRow ?? base)
      return {
        name,
        kind,
        risk: RISK[kind],
        cost,
        bytesPerRow,
        savingPct: pct(base, bytesPerRow),
        timeRatio: baseline.durationMs > 0 ? cost.durationMs / baseline.durationMs : null,
        measured: true,
        available: true,
        how,
      }
    },
  }
  const remedies = [
    ...(await batchingRemedies(runs)),
    await dropIndexesRemedy(runs),
    ...(await compressionRemedies(runs)),
  ]

  const checkpointSpacing = await spacingCurve(options, baseline, steady, measure)
  const commitSizes = await commitSizeCurve(session, base)
  remedies.push(spacingRemedy(options, baseline, steady))
  remedies.sort(
    (a, b) => Number(b.available) - Number(a.available) || (b.savingPct ?? -Infinity) - (a.savingPct ?? -Infinity),
  )
  const again = await measure()
  const notes =
    comparable.startingState !== 'ordered'
      ? [fromIdenticalStates(baseline.scenario.checkpoint), ...startingNotes(comparable)]
      : baseline.breakdown
        ? [partByPart(baseline.scenario.checkpoint)]
        : [
            "Without attribution by relation (neither the WAL nor pg_walinspect could be read) each remedy's own run is compared whole with the baseline: later runs touch more pages (the dead entries of rolled-back runs), which understates savings.",
          ]
  return {
    kind: 'remedies',
    baseline,
    steady,
    remedies,
    checkpointSpacing,
    commitSizes,
    startingState: comparable.startingState,
    sample: comparable.sample,
    aa: aaCheck('baseline', baseline, again),
    notes,
    serverCost: meter && (await meter()),
  }
}

/** What every measured remedy shares: the runs from one starting state, judged against one baseline. */
interface RemedyRuns {
  session: Session
  table: Table
  options: ParsedRemediesOptions
  comparable: ComparableRuns
  /** The batch with the remedy's changes, measured like the baseline. */
  measure(changes?: Remedial): Promise<InsertCost>
  /** A remedy measured by `cost`, with its saving against the baseline. */
  measured(name: string, kind: RemedyKind, cost: InsertCost, how: string): Remedy
}

/** Remedy 1: multi-row INSERT at each batch size, and COPY; given SQL or code has no rows to batch. */
async function batchingRemedies({ options, measure, measured }: RemedyRuns): Promise<Remedy[]> {
  if (options.sql !== undefined || options.run !== undefined) {
    return [
      unavailable(
        'batching',
        'batching',
        'give the batch as rows or count to measure multi-row INSERT and COPY against it',
      ),
    ]
  }
  const remedies: Remedy[] = []
  for (const batchSize of options.batchSizes.filter(
    (size) => options.method !== 'multirow' || size !== options.batchSize,
  )) {
    remedies.push(
      measured(
        `${counted(batchSize, 'row')} an INSERT`,
        'batching',
        await measure({ method: 'multirow', batchSize }),
        `send ${batchSize} rows a statement (INSERT ... VALUES (...), (...)): fewer statements and round trips; the WAL records stay one a row`,
      ),
    )
  }
  if (options.method !== 'copy') {
    remedies.push(
      measured(
        'COPY',
        'batching',
        await measure({ method: 'copy' }),
        'load with COPY FROM STDIN: heap rows go in one multi-insert record a page instead of one record a row',
      ),
    )
  }
  return remedies
}

/** Remedy 2: the table without the indexes named, or the audit's drop candidates. */
async function dropIndexesRemedy({
  session,
  table,
  options,
  comparable,
  measure,
  measured,
}: RemedyRuns): Promise<Remedy> {
  const name = 'drop unused indexes'
  if (!table.owned && comparable.startingState !== 'scratch-copy') {
    return unavailable(
      name,
      'drop-indexes',
      `dropping an index, even in a transaction that is rolled back, needs ownership of ${table.quoted}: measure as its owner`,
    )
  }
  const toDrop = options.dropIndexes ?? (await dropCandidates(session, table, options.minStatsAgeDays))
  if (toDrop.length === 0) {
    return unavailable(
      name,
      'drop-indexes',
      `the audit's judgement finds no drop candidate: every index backs a constraint, has been scanned, or its counters cover less than minStatsAgeDays (${options.minStatsAgeDays} days); name indexes with dropIndexes to measure the table without them`,
    )
  }
  return measured(
    `drop ${toDrop.join(', ')}`,
    'drop-indexes',
    await measure({ dropIndexes: toDrop }),
    `DROP INDEX ${toDrop.join(', ')}: check pg_stat_user_indexes.idx_scan over a long enough window, replicas and rare jobs first`,
  )
}

/** Remedy 3: wal_compression with each method the server may set for the measuring transaction. */
async function compressionRemedies({ session, options, measure, measured }: RemedyRuns): Promise<Remedy[]> {
  const remedies: Remedy[] = []
  for (const method of options.compression) {
    const name = `wal_compression = ${method}`
    const refusal = await settingRefusal(session, 'wal_compression', method)
    remedies.push(
      refusal === null
        ? measured(
            name,
            'wal-compression',
            await measure({ settings: { wal_compression: method } }),
            `ALTER SYSTEM SET wal_compression = ${method}: full-page images are compressed, at the CPU cost shown as timeRatio`,
          )
        : unavailable(name, 'wal-compression', refusal),
    )
  }
  return remedies
}

/** The batch committed every 1, 10, 100 and 1,000 rows: what single-row ingest pays for in WAL and flushes. */
async function commitSizeCurve(session: Session, bytesPerRow: number): Promise<CommitSizes> {
  const cost = await measureCommits(session, await readServer(session), COMMITS_MEASURED)
  return {
    cost,
    points: [1, 10, 100, 1_000].map((rowsPerCommit) => ({
      rowsPerCommit,
      bytesPerRow: bytesPerRow + cost.walBytesPerCommit / rowsPerCommit,
      writesPerRow: cost.writesPerCommit === null ? null : cost.writesPerCommit / rowsPerCommit,
      syncsPerRow: cost.syncsPerCommit === null ? null : cost.syncsPerCommit / rowsPerCommit,
    })),
  }
}

/**
 * Why the server refuses `name = value` for a session, or null when it accepts it. Only this refusal
 * makes a remedy unavailable: a fault during the remedy's own run (a cancel, a terminated backend,
 * a lock timeout) fails the call like any other run's.
 */
function settingRefusal(session: Session, name: string, value: string): Promise<string | null> {
  return rolledBack(session, 'transaction', async () => {
    try {
      await session.query('select set_config($1, $2, true)', [name, value])
      return null
    } catch (error) {
      const state = sqlStateOf(error)
      if (state === '42501')
        return `only a superuser may SET ${name} for a session: measure as one, or set it in postgresql.conf and measure again`
      if (state === '22023')
        return `this server cannot use ${value} for ${name} (built without it): ${(error as Error).message}`
      throw error
    }
  })
}

/**
 * The baseline with the part the remedy changes replaced by what the remedy's run measured. Each
 * run rolls back, but its dead rows and index entries stay, so later runs touch more pages and
 * take more images: comparing whole runs would charge that drift to the remedy. Without
 * attribution, the remedy's own bytes per row are all there is.
 */
function remedyBytesPerRow(kind: RemedyKind, baseline: InsertCost, cost: InsertCost): number {
  const base = baseline.bytesPerRow ?? 0
  const [before, after] = [baseline.breakdown, cost.breakdown]
  if (!before || !after || !baseline.rows || !cost.rows) return cost.bytesPerRow ?? base
  const perRow = (bytes: number, rows: number) => bytes / rows
  if (kind === 'batching') {
    // Heap records (and statement overhead in 'other') change; index records and images do not.
    const heapAndOther = (split: Breakdown, rows: number) => perRow(split.heapBytes + split.otherBytes, rows)
    return base - heapAndOther(before, baseline.rows) + heapAndOther(after, cost.rows)
  }
  if (kind === 'drop-indexes') {
    const dropped = new Set(cost.scenario.droppedIndexes)
    return (
      base -
      baseline.indexes
        .filter((index) => dropped.has(index.name))
        .reduce((sum, index) => sum + perRow(index.walBytes, baseline.rows), 0)
    )
  }
  // wal_compression: the measured size of an image against the baseline's, applied to its images.
  const imageSize = (split: Breakdown, run: InsertCost) => (run.fpiCount ? split.fpiBytes / run.fpiCount : 0)
  const ratio = imageSize(before, baseline) > 0 ? imageSize(after, cost) / imageSize(before, baseline) : 1
  return base - perRow(before.fpiBytes, baseline.rows) * (1 - ratio)
}

/**
 * WAL per row once N rows separate two checkpoints: the images a checkpoint causes (after-checkpoint
 * minus steady, for the batch) spread over N rows, on top of the steady cost. At N = the batch it is
 * the after-checkpoint measurement; as N grows it falls to the steady one. Smaller N is measured
 * with smaller batches where the batch is `count`.
 */
function spacingAt(baseline: InsertCost, steady: InsertCost, rows: number): number {
  const excess = baseline.walBytes - (steady.bytesPerRow ?? 0) * baseline.rows
  return (steady.bytesPerRow ?? 0) + Math.max(0, excess) / rows
}

async function spacingCurve(
  options: ParsedRemediesOptions,
  baseline: InsertCost,
  steady: InsertCost,
  measure: (changes: Remedial) => Promise<InsertCost>,
): Promise<SpacingPoint[]> {
  const points: SpacingPoint[] = []
  // Rows between checkpoints mean nothing when no CHECKPOINT could run.
  if (!baseline.scenario.checkpoint) return points
  if (options.count !== undefined && options.count >= 8) {
    for (const divisor of [4, 2]) {
      const cost = await measure({ count: Math.floor(options.count / divisor) })
      points.push({ rowsBetweenCheckpoints: cost.rows, bytesPerRow: cost.bytesPerRow ?? 0, measured: true })
    }
  }
  points.push({ rowsBetweenCheckpoints: baseline.rows, bytesPerRow: baseline.bytesPerRow ?? 0, measured: true })
  for (const factor of [2, 4, 8, 16, 64, 256]) {
    points.push({
      rowsBetweenCheckpoints: baseline.rows * factor,
      bytesPerRow: spacingAt(baseline, steady, baseline.rows * factor),
      measured: false,
    })
  }
  return points
}

/** Rows between checkpoints: after checkpoint_timeout, or after about max_wal_size / 1.9 of WAL, whichever comes first. */
function rowsPerCycle(timeoutSeconds: number, maxWalBytes: number, rate: number, bytesPerRow: number): number {
  return Math.min(rate * timeoutSeconds, maxWalBytes / 1.9 / Math.max(1, bytesPerRow))
}

function spacingRemedy(options: ParsedRemediesOptions, baseline: InsertCost, steady: InsertCost): Remedy {
  const { checkpointTimeoutSeconds: timeout, maxWalSizeBytes: maxWal, checkpointTimeout, maxWalSize } = baseline.server
  const rate = options.targetRowsPerSec
  const now = rowsPerCycle(timeout, maxWal, rate, steady.bytesPerRow ?? 1)
  const longer = rowsPerCycle(timeout * 4, maxWal * 4, rate, steady.bytesPerRow ?? 1)
  if (!baseline.scenario.checkpoint) {
    // Both runs were steady: their difference is noise, not what a checkpoint costs.
    return unavailable(
      'checkpoints 4x further apart',
      'checkpoint-spacing',
      `cannot be derived: it needs the batch right after a CHECKPOINT, which was skipped (${baseline.skipped.find((entry) => entry.step === 'checkpoint')?.reason ?? 'not allowed'}).`,
    )
  }
  const current = spacingAt(baseline, steady, now)
  const spaced = spacingAt(baseline, steady, longer)
  return {
    name: 'checkpoints 4x further apart',
    kind: 'checkpoint-spacing',
    risk: RISK['checkpoint-spacing'],
    cost: null,
    bytesPerRow: spaced,
    savingPct: pct(current, spaced),
    timeRatio: null,
    measured: false,
    available: true,
    how: `derived from the after-checkpoint and steady measurements, not measured: at ${rate} rows/s a checkpoint now comes every ${Math.round(now).toLocaleString('en-US')} rows (checkpoint_timeout ${checkpointTimeout}, max_wal_size ${maxWalSize}), costing ${current.toFixed(1)} bytes a row; with both 4x larger, every ${Math.round(longer).toLocaleString('en-US')} rows and ${spaced.toFixed(1)} bytes a row. The price: crash recovery may replay up to 4x more WAL, and more WAL stays on disk.`,
  }
}
