import { z } from 'zod'
import { DEFAULT_AUDIT_COUNT } from '../defaults.js'
import type { Session } from '../driver/types.js'
import { throwIfAborted, WalcostError } from '../errors.js'
import { batchOptionsSchema, parseOptions, replayableRows } from '../options.js'
import { MB } from '../units.js'
import { readServer } from '../wal/server.js'
import { type Index, resolveTable } from './catalog.js'
import { type Comparison, comparableOptionsShape, comparableRuns, measureOn } from './comparable.js'
import { type IndexVerdict, judge, minStatsAgeDaysSchema, readStatsAge } from './index-usage.js'
import { onDatabase } from './lifecycle.js'
import type { InsertCost, Skipped } from './result.js'
import { compareOnSession, type Decomposition, firstRunOf, scenarioName } from './scenarios.js'
import { readSyntheticStart } from './synthetic.js'

/**
 * Options of {@link auditIndexes}. The batch is `count` synthetic rows (default 10,000) shaped like
 * the sample, or `rows`.
 *
 * @example
 * const options: AuditOptions = { db: process.env.DATABASE_URL, table: 'device_metrics', rowsPerSec: 50_000 }
 */
export const auditOptionsSchema = batchOptionsSchema
  .omit({ sql: true })
  .extend({
    ...comparableOptionsShape,
    minStatsAgeDays: minStatsAgeDaysSchema,
    rowsPerSec: z
      .number()
      .positive()
      .optional()
      .describe("The table's ingest rate, to say what the drop candidates cost in MB/s and GB/day."),
  })
  .superRefine((options, context) => {
    if (options.rows !== undefined && options.count !== undefined) {
      context.addIssue({ code: 'custom', path: ['count'], message: 'give the batch as rows or count, not both' })
    }
  })
  .superRefine(replayableRows("the audit's scenarios"))
  .transform((options) => ({
    ...options,
    count: options.rows === undefined ? (options.count ?? DEFAULT_AUDIT_COUNT) : undefined,
  }))

export type AuditOptions = z.input<typeof auditOptionsSchema>
type ParsedAuditOptions = z.output<typeof auditOptionsSchema>

export interface IndexAudit {
  name: string
  definition: string
  /** WAL per inserted row right after a checkpoint: records and their full-page images. */
  walBytesPerRow: number
  /** WAL per row in steady state (pages already dirty): records only, mostly. */
  steadyBytesPerRow: number
  recordsPerRow: number
  /** Share of the index's after-checkpoint WAL that is full-page images. */
  fpiShare: number
  sizeBytes: number
  /** Scans since statsSince (pg_stat_user_indexes.idx_scan). */
  idxScan: number
  /** What the index backs: 'primary key', 'unique', 'exclusion', 'foreign key lookup', 'replica identity', or null. */
  backsConstraint: string | null
  verdict: IndexVerdict
  reason: string
}

export interface IndexAuditResult extends Comparison {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'index-audit'
  table: string
  /** Since when the usage counters have accumulated (ISO), and for how many days. */
  statsSince: string
  statsAgeDays: number
  indexes: IndexAudit[]
  /** WAL per row after a checkpoint with every index, and without the drop candidates (null: none). */
  bytesPerRow: number
  bytesPerRowWithoutDropCandidates: number | null
  /** What the drop candidates cost at `rowsPerSec`, when it was given (MB = 10^6 bytes). */
  atRate: { rowsPerSec: number; walMBps: number; walMBpsWithoutDropCandidates: number; savedGBPerDay: number } | null
  decomposition: Decomposition
  /** The measurements, by scenario name, under the real table's and indexes' names. */
  scenarios: Record<string, InsertCost>
  skipped: Skipped[]
}

/** auditIndexes without the notebook display; the exported entry point is in api.ts. */
export async function auditIndexes(options: AuditOptions): Promise<IndexAuditResult> {
  const parsed = parseOptions(auditOptionsSchema, options)
  return onDatabase(parsed, (session) => auditOnSession(session, parsed))
}

async function auditOnSession(session: Session, options: ParsedAuditOptions): Promise<IndexAuditResult> {
  const server = await readServer(session)
  const table = await resolveTable(session, options.table)
  const { statsSince, statsAgeDays } = await readStatsAge(session)
  throwIfAborted(options.signal)
  const comparable = await comparableRuns(session, table, { runsOn: options.runsOn, sampleRows: options.sampleRows })
  const syntheticStart = options.count !== undefined ? await readSyntheticStart(session, table) : undefined
  const byAttribution = server.capabilities.readWal || 'schema' in server.capabilities.walinspect
  const comparison = await compareOnSession(
    session,
    { ...options, sql: undefined, perIndex: !byAttribution },
    { comparable, syntheticStart },
  )
  const scenarios = { ...comparison.scenarios }
  const first = firstRunOf(scenarios)
  if (!first) throw new WalcostError('BATCH_FAILED', 'the audit measured no first run; report this as a walcost bug.')
  const indexes = table.indexes.map((index) =>
    auditIndex(index, first, scenarios, statsAgeDays, options.minStatsAgeDays),
  )
  const candidates = indexes.filter((index) => index.verdict === 'drop-candidate').map((index) => index.name)
  if (candidates.length > 0) {
    scenarios[scenarioName({ kind: 'without-drop-candidates' })] = await comparable.run((target) =>
      measureOn(target, options, { checkpoint: true, dropIndexes: candidates }, syntheticStart),
    )
  }
  const bytesPerRow = first.bytesPerRow ?? 0
  const withoutCandidates = scenarios[scenarioName({ kind: 'without-drop-candidates' })]?.bytesPerRow ?? null
  return {
    kind: 'index-audit',
    table: table.quoted,
    startingState: comparable.startingState,
    sample: comparable.sample,
    aa: comparison.aa,
    statsSince,
    statsAgeDays,
    indexes,
    bytesPerRow,
    bytesPerRowWithoutDropCandidates: withoutCandidates,
    atRate:
      options.rowsPerSec === undefined
        ? null
        : {
            rowsPerSec: options.rowsPerSec,
            walMBps: (bytesPerRow * options.rowsPerSec) / MB,
            walMBpsWithoutDropCandidates: ((withoutCandidates ?? bytesPerRow) * options.rowsPerSec) / MB,
            savedGBPerDay: ((bytesPerRow - (withoutCandidates ?? bytesPerRow)) * options.rowsPerSec * 86_400) / 1e9,
          },
    decomposition: comparison.decomposition,
    scenarios,
    notes: comparison.notes,
    skipped: first.skipped,
  }
}

function auditIndex(
  index: Index,
  cold: InsertCost,
  scenarios: Record<string, InsertCost>,
  ageDays: number,
  minAgeDays: number,
): IndexAudit {
  const steady = scenarios[scenarioName({ kind: 'steady' })] ?? cold
  const rows = Math.max(1, cold.rows)
  const measured = cold.indexes.find((entry) => entry.name === index.name)
  const steadyMeasured = steady.indexes.find((entry) => entry.name === index.name)
  // Without pg_walinspect, an index's cost is what dropping it alone saves.
  const without = scenarios[scenarioName({ kind: 'without-index', index: index.name })]
  const walBytes = measured?.walBytes ?? (without ? steady.walBytes - without.walBytes : 0)
  const idxScan = index.scans ?? 0
  const { verdict, reason } = judge(idxScan, index.backs, ageDays, minAgeDays, walBytes / rows)
  return {
    name: index.name,
    definition: index.definition,
    walBytesPerRow: walBytes / rows,
    steadyBytesPerRow: (steadyMeasured?.walBytes ?? walBytes) / Math.max(1, steady.rows),
    recordsPerRow: (measured?.records ?? 0) / rows,
    fpiShare: measured && measured.walBytes > 0 ? measured.fpiBytes / measured.walBytes : 0,
    sizeBytes: index.sizeBytes,
    idxScan,
    backsConstraint: index.backs,
    verdict,
    reason,
  }
}
