/**
 * Options of {@link auditIndexes}. The batch is `count` synthetic rows (default 10,000) shaped like
 * the sample, or `rows`.
 *
 * @example
 * const options: AuditOptions = { db: process.env.DATABASE_URL, table: 'device_metrics', rowsPerSec: 50_000 }
 */
import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod'
import { DEFAULT_AUDIT_COUNT } from '../core/defaults.js'
import { abortedError, throwIfAborted, WalcostError } from '../core/errors.js'
import { integer, percent } from '../core/format.js'
import { batchOptionsSchema, parseOptions, replayableRows } from '../core/options.js'
import { MB } from '../core/units.js'
import type { Session } from '../driver/types.js'
import { type Index, resolveTable, type Table } from '../measure/catalog.js'
import { hotBlockers, setColumnsOf } from '../measure/hot.js'
import { onDatabase } from '../measure/lifecycle.js'
import type { InsertCost, Skipped } from '../measure/result.js'
import { readSyntheticStart } from '../measure/synthetic.js'
import type { WalObservation } from '../traffic/observation.js'
import { observeOnSession } from '../traffic/observe.js'
import { readServer, readWalAdvice, type Server, windowSplit } from '../wal/server.js'
import { meterServerCost, type ServerCost } from '../wal/snapshot.js'
import { type Comparison, comparableOptionsShape, comparableRuns, measureOn } from './comparable.js'
import {
  type IndexTraffic,
  type IndexVerdict,
  judge,
  judgeTraffic,
  minStatsAgeDaysSchema,
  readIndexScans,
  readStatsAge,
} from './index-usage.js'
import { compareOnSession, type Decomposition, firstRunOf, scenarioName } from './scenarios.js'

export const auditOptionsSchema = batchOptionsSchema
  .omit({ sql: true, run: true })
  .extend({
    ...comparableOptionsShape,
    minStatsAgeDays: minStatsAgeDaysSchema,
    rowsPerSec: z
      .number()
      .positive()
      .optional()
      .describe("The table's ingest rate, to say what the drop candidates cost in MB/s and GB/day."),
    sampleUpdate: z
      .string()
      .trim()
      .min(1)
      .optional()
      .describe(
        'An UPDATE the workload runs, e.g. "update orders set status = $1 where id = $2" (not run): the columns it sets are checked against each index, which may cost it HOT.',
      ),
    traffic: z
      .strictObject({
        durationMs: z
          .number()
          .int()
          .min(1)
          .max(86_400_000)
          .describe("How long to observe the server's own traffic before measuring."),
      })
      .optional()
      .describe(
        "Judge each index on the server's real traffic: its WAL (from the WAL itself) and its scans over a window this long, observed before anything is measured.",
      ),
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
  /**
   * WAL per inserted row right after a checkpoint: records and their full-page images. null when
   * neither the WAL by relation nor a run without the index could tell (no WAL access, no ownership).
   */
  walBytesPerRow: number | null
  /** WAL per row in steady state (pages already dirty): records only, mostly; null as walBytesPerRow. */
  steadyBytesPerRow: number | null
  /** null when the WAL could not be read by relation: the index's cost is then what dropping it saves. */
  recordsPerRow: number | null
  /** Share of the index's after-checkpoint WAL that is full-page images; null when the WAL could not be read by relation. */
  fpiShare: number | null
  sizeBytes: number
  /** Scans since statsSince (pg_stat_user_indexes.idx_scan). */
  idxScan: number
  /** What the index backs: 'primary key', 'unique', 'exclusion', 'foreign key lookup', 'replica identity', or null. */
  backsConstraint: string | null
  verdict: IndexVerdict
  reason: string
  /** Whether the sample update sets a column of this index, so that it cannot be HOT; null without a sample update. */
  blocksHot: boolean | null
  /** What it did in the observed window of real traffic (then the verdict is judged on it); null without `traffic`. */
  traffic: IndexTraffic | null
}

/** How the table's updates fare: the counters, and what the sample update's columns mean for HOT. */
export interface UpdateEvidence {
  /** pg_stat_user_tables.n_tup_upd and n_tup_hot_upd since statsSince. */
  updated: number
  hotUpdated: number
  /** hotUpdated / updated; null when nothing was updated. */
  hotShare: number | null
  /** Columns the sample update sets; null without one. */
  setColumns: string[] | null
  /** Indexes on those columns: each makes the sample update non-HOT. */
  forcingIndexes: string[]
  /** What the counters and the sample update say, in words. */
  summary: string
}

export interface IndexAuditResult extends Comparison {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'index-audit'
  table: string
  /** Since when the usage counters have accumulated (ISO), and for how many days. */
  statsSince: string
  statsAgeDays: number
  indexes: IndexAudit[]
  /** The observed window of real traffic the verdicts were judged on; null without `traffic`. */
  traffic: WalObservation<'server'>['window'] | null
  /** What the audit's runs cost the server (after the traffic window); null on PGlite, where they ran on clones. */
  serverCost: ServerCost | null
  /** WAL per row after a checkpoint with every index, and without the drop candidates (null: none). */
  bytesPerRow: number
  bytesPerRowWithoutDropCandidates: number | null
  /** What the drop candidates cost at `rowsPerSec`, when it was given (MB = 10^6 bytes). */
  atRate: { rowsPerSec: number; walMBps: number; walMBpsWithoutDropCandidates: number; savedGBPerDay: number } | null
  decomposition: Decomposition
  updates: UpdateEvidence
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
  // What the audit cannot do is said first: nothing waits out a window that could tell nothing.
  if (options.traffic) refuseTraffic(session, server)
  const comparable = await comparableRuns(session, table, { runsOn: options.runsOn, sampleRows: options.sampleRows })
  // Before anything is measured: the measurements' own WAL must not count as the server's traffic.
  const observed = options.traffic ? await observeTraffic(session, table, options, options.traffic.durationMs) : null
  const meter = comparable.startingState === 'clone' ? null : await meterServerCost(session)
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
  const updates = await readUpdateEvidence(session, table, options.sampleUpdate, server.facts.versionNum)
  const indexes = table.indexes.map((index) => {
    const traffic = observed?.indexes.get(index.name) ?? null
    const audit = auditIndex(index, first, scenarios, statsAgeDays, options.minStatsAgeDays)
    return {
      ...audit,
      ...(traffic &&
        observed &&
        judgeTraffic(traffic, index.backs, observed.window.durationMs, options.minStatsAgeDays)),
      blocksHot: updates.setColumns === null ? null : updates.forcingIndexes.includes(index.name),
      traffic,
    }
  })
  const candidates = indexes.filter((index) => index.verdict === 'drop-candidate').map((index) => index.name)
  if (candidates.length > 0) {
    scenarios[scenarioName({ kind: 'without-drop-candidates' })] = await comparable.run((target) =>
      measureOn(target, options, { checkpoint: true, dropIndexes: candidates }, syntheticStart),
    )
  }
  const serverCost = meter && (await meter())
  const bytesPerRow = first.bytesPerRow ?? 0
  const withoutCandidates = scenarios[scenarioName({ kind: 'without-drop-candidates' })]?.bytesPerRow ?? null
  return {
    kind: 'index-audit',
    table: table.quoted,
    startingState: comparable.startingState,
    sample: comparable.sample,
    aa: comparison.aa,
    serverCost,
    statsSince,
    statsAgeDays,
    indexes,
    traffic: observed?.window ?? null,
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
    updates,
    scenarios,
    notes: comparison.notes,
    skipped: first.skipped,
  }
}

/** Why the server's own traffic cannot be observed here: said before any window or run, not after. */
function refuseTraffic(session: Session, server: Server): void {
  if (session.backend === 'pglite') {
    throw new WalcostError(
      'INVALID_OPTIONS',
      'traffic: PGlite runs one session, so it has no traffic of its own to observe. Audit a PostgreSQL server.',
      { field: 'traffic' },
    )
  }
  // Without the WAL the window would tell nothing.
  if (!windowSplit(server)) {
    throw new WalcostError(
      'PERMISSION_DENIED',
      `traffic: this role may not read the WAL files, so no index's share of the traffic can be told: ${readWalAdvice(server.capabilities, 'split')}.`,
      { field: 'traffic' },
    )
  }
}

/**
 * The server's own traffic for `durationMs`: each index's WAL from the WAL itself, and its scans
 * over the same window, read inside it (the window's session is idle meanwhile; the WAL is read
 * on the other one).
 */
async function observeTraffic(
  session: Session,
  table: Table,
  options: ParsedAuditOptions,
  durationMs: number,
): Promise<{ window: WalObservation<'server'>['window']; indexes: Map<string, IndexTraffic> }> {
  let before = new Map<string, number>()
  let after = new Map<string, number>()
  const observation = await observeOnSession(session, {
    run: async () => {
      before = await readIndexScans(session, table.oid)
      await sleep(durationMs, undefined, { signal: options.signal }).catch((error: unknown) => {
        throw abortedError(error)
      })
      after = await readIndexScans(session, table.oid)
    },
    durationMs: undefined,
    flushTimeoutMs: options.flushTimeoutMs,
    signal: options.signal,
  })
  const indexes = new Map<string, IndexTraffic>()
  for (const index of table.indexes) {
    const relation = (observation.relations ?? []).find(
      (entry) => entry.kind === 'index' && entry.name === index.name && entry.schema === table.schema,
    )
    indexes.set(index.name, {
      walBytes: relation?.bytes ?? 0,
      records: relation?.records ?? 0,
      fpiCount: relation?.fpiCount ?? 0,
      idxScan: (after.get(index.name) ?? 0) - (before.get(index.name) ?? 0),
    })
  }
  return { window: observation.window, indexes }
}

/** The table's update counters, and which indexes the sample update's columns would cost HOT. */
async function readUpdateEvidence(
  session: Session,
  table: Table,
  sampleUpdate: string | undefined,
  versionNum: number,
): Promise<UpdateEvidence> {
  const [row] = await session.query<{ updated: string; hot: string }>(
    `select coalesce(n_tup_upd, 0)::text as updated, coalesce(n_tup_hot_upd, 0)::text as hot
       from pg_stat_user_tables where relid = $1::oid`,
    [table.oid],
  )
  const updated = Number(row?.updated ?? 0)
  const hotUpdated = Number(row?.hot ?? 0)
  const hotShare = updated > 0 ? hotUpdated / updated : null
  const setColumns = sampleUpdate === undefined ? null : setColumnsOf(sampleUpdate)
  const forcing =
    setColumns === null ? [] : hotBlockers(table, setColumns, versionNum).forcing.map((index) => index.name)
  const counters =
    hotShare === null
      ? 'No updates are counted since the statistics began.'
      : `${percent(hotShare)} of the ${integer(updated)} updates counted were HOT.`
  const sample =
    setColumns === null
      ? 'Give a sample update (sampleUpdate, --sample-update) to check its columns against each index.'
      : forcing.length > 0
        ? `The sample update sets ${setColumns.join(', ')}, a column of ${forcing.join(', ')}: it can never be HOT while ${forcing.length === 1 ? 'that index exists' : 'those indexes exist'}.`
        : `The sample update sets ${setColumns.join(', ') || 'no column walcost could read'}, a column of no index: it is HOT wherever its page has room.`
  return { updated, hotUpdated, hotShare, setColumns, forcingIndexes: forcing, summary: `${counters} ${sample}` }
}

function auditIndex(
  index: Index,
  cold: InsertCost,
  scenarios: Record<string, InsertCost>,
  ageDays: number,
  minAgeDays: number,
): Omit<IndexAudit, 'blocksHot' | 'traffic'> {
  const steady = scenarios[scenarioName({ kind: 'steady' })] ?? cold
  const rows = Math.max(1, cold.rows)
  const measured = cold.indexes.find((entry) => entry.name === index.name)
  const steadyMeasured = steady.indexes.find((entry) => entry.name === index.name)
  // Without pg_walinspect, an index's cost is what dropping it alone saves.
  const without = scenarios[scenarioName({ kind: 'without-index', index: index.name })]
  const walBytes = measured?.walBytes ?? (without ? steady.walBytes - without.walBytes : null)
  const walBytesPerRow = walBytes === null ? null : walBytes / rows
  const { verdict, reason } = judge(index.scans, index.backs, ageDays, minAgeDays, walBytesPerRow)
  const steadyBytes = steadyMeasured?.walBytes ?? walBytes
  return {
    name: index.name,
    definition: index.definition,
    walBytesPerRow,
    steadyBytesPerRow: steadyBytes === null ? null : steadyBytes / Math.max(1, steady.rows),
    recordsPerRow: measured ? measured.records / rows : null,
    fpiShare: measured ? (measured.walBytes > 0 ? measured.fpiBytes / measured.walBytes : 0) : null,
    sizeBytes: index.sizeBytes,
    idxScan: index.scans,
    backsConstraint: index.backs,
    verdict,
    reason,
  }
}
