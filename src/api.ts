/*
 * The exported entry points: each runs its layer's function and attaches the notebook display to
 * the result, so that measurement and model code return plain values.
 */
/**
 * Measures what a batch of inserts writes to WAL: runs it in a transaction that is rolled back,
 * between two insert-LSN snapshots, and splits the window by transaction and relation from the WAL
 * itself (walcost's own reader), pg_walinspect where the WAL cannot be read, or totals only.
 *
 * @example
 * const cost = await measureInsertCost({
 *   setup: 'create table t (id int8 primary key, at timestamptz not null, v float8)',
 *   table: 't',
 *   count: 10_000,
 *   checkpoint: true,
 * })
 * console.log(cost.bytesPerRow, cost.breakdown, cost.indexes)
 */
import { type AuditOptions, auditIndexes as auditIndexesPlain, type IndexAuditResult } from './compare/audit.js'
import { type FieldNotesOptions, fieldNotesExperiment as fieldNotesExperimentPlain } from './compare/field-notes.js'
import {
  compareMigration as compareMigrationPlain,
  type MigrationComparison,
  type MigrationOptions,
} from './compare/migration.js'
import {
  compareRemedies as compareRemediesPlain,
  type RemediesOptions,
  type RemedyComparison,
} from './compare/remedies.js'
import {
  compareScenarios as compareScenariosPlain,
  type ScenarioComparison,
  type ScenariosOptions,
} from './compare/scenarios.js'
import {
  compareWriteScenarios as compareWriteScenariosPlain,
  type WriteScenarioComparison,
  type WriteScenariosOptions,
} from './compare/write-scenarios.js'
import type { Database } from './core/database.js'
import type { MeasureOptions } from './core/options.js'
import { measureInsertCost as measureInsertCostPlain } from './measure/measure.js'
import type { InsertCost } from './measure/result.js'
import { measureWriteCost as measureWriteCostPlain, type WriteCost, type WriteOptions } from './measure/write.js'
import {
  type CalibrateIngestOptions,
  calibrateIngest as calibrateIngestPlain,
  type IngestCalibration,
} from './model/calibrate-ingest.js'
import {
  type CeilingOptions,
  type CostInput,
  estimateIngestCeiling as estimateIngestCeilingPlain,
  type IngestCeiling,
} from './model/ceiling.js'
import {
  type InsertCostPrediction,
  type PredictOptions,
  predictInsertCost as predictInsertCostPlain,
} from './model/predict.js'
import { withDisplay } from './report/display.js'
import {
  serveWalMetrics as serveWalMetricsPlain,
  type WalMetricsOptions,
  type WalMetricsServer,
} from './traffic/exporter.js'
import { type InspectOptions, inspectWal as inspectWalPlain } from './traffic/inspect.js'
import type { WalObservation } from './traffic/observation.js'
import { type ObserveOptions, observeWal as observeWalPlain } from './traffic/observe.js'
import { type WatchOptions, watchWal as watchWalPlain } from './traffic/watch.js'

export async function measureInsertCost<Db extends Database | undefined = undefined>(
  options: MeasureOptions<Db>,
): Promise<InsertCost> {
  return withDisplay(await measureInsertCostPlain(options))
}

/**
 * The field notes' method in one call: the same batch right after a CHECKPOINT, again in steady
 * state (the first run is its warm-up, so pages are already dirty), with every index dropped and
 * without each index alone, then the cost split into heap, each index, full-page images and the rest.
 *
 * @example
 * const { scenarios, decomposition } = await compareScenarios({ db: url, table: 'device_metrics', count: 100_000 })
 * console.log(decomposition.summary) // "index maintenance is 59% of WAL after a checkpoint; ..."
 */
export async function compareScenarios<Db extends Database | undefined = undefined>(
  options: ScenariosOptions<Db>,
): Promise<ScenarioComparison> {
  return withDisplay(await compareScenariosPlain(options))
}

/**
 * The four remedies of the field notes measured side by side on the caller's batch, each right
 * after a checkpoint like the baseline: batching (multi-row INSERT, COPY), dropping unused indexes,
 * wal_compression, and, derived from measurements, fewer checkpoints. Everything is rolled back.
 *
 * @example
 * const { baseline, remedies } = await compareRemedies({ setup, table: 'device_metrics', count: 100_000 })
 * for (const remedy of remedies) console.log(remedy.name, remedy.savingPct, remedy.risk)
 */
export async function compareRemedies<Db extends Database | undefined = undefined>(
  options: RemediesOptions<Db>,
): Promise<RemedyComparison> {
  return withDisplay(await compareRemediesPlain(options))
}

/**
 * What each index costs on the write path against what it is worth on the read path. The cost is
 * measured on a scratch copy of the table (same columns, defaults, constraints and indexes, filled
 * with a sample of the real rows) created inside a transaction that is rolled back: the real table
 * is only read, under ACCESS SHARE bounded by lockTimeoutMs, and a crash or a killed connection
 * leaves nothing behind.
 *
 * @example
 * const audit = await auditIndexes({ db: process.env.DATABASE_URL, table: 'device_metrics', rowsPerSec: 50_000 })
 * for (const index of audit.indexes) console.log(index.name, index.verdict, index.reason)
 */
export async function auditIndexes(options: AuditOptions): Promise<IndexAuditResult> {
  return withDisplay(await auditIndexesPlain(options))
}

/**
 * The field notes' experiment: a table of `prefillRows`, then `batchRows` inserted right after a
 * CHECKPOINT, again without one, with the three indexes dropped and without each alone, decomposed.
 * Every run is rolled back; on a real server the demo's schema is dropped at the end.
 *
 * @example
 * const comparison = await fieldNotesExperiment({ prefillRows: 500_000, batchRows: 100_000 })
 * console.log(formatResult(comparison))
 */
export async function fieldNotesExperiment(options: FieldNotesOptions = {}): Promise<ScenarioComparison> {
  return withDisplay(await fieldNotesExperimentPlain(options))
}

/**
 * Predicts what inserting into a table writes to WAL, from its definition alone, with the record
 * formats of PostgreSQL 15-18: no rows are written. Steady state: no full-page images.
 *
 * @example
 * const prediction = await predictInsertCost({ db: url, table: 'device_metrics' })
 * console.log(prediction.bytesPerRow, prediction.indexes)
 */
export async function predictInsertCost(options: PredictOptions): Promise<InsertCostPrediction> {
  return withDisplay(await predictInsertCostPlain(options))
}

/**
 * The ingest rate a storage can sustain for a measured (or predicted) WAL cost per row, the limit
 * that binds first, and what a target rate means in WAL MB/s, GB/day, replication and archive.
 *
 * @example
 * const ceiling = estimateIngestCeiling({ bytesPerRow: 345, dataBytesPerRow: 40 }, { storage: 'gp3', targetRowsPerSec: 50_000 })
 * ceiling.walMBps // ~17.25: 17 MB/s of WAL for 2 MB/s of data
 */
export function estimateIngestCeiling(cost: CostInput, options: CeilingOptions = {}): IngestCeiling {
  return withDisplay(estimateIngestCeilingPlain(cost, options))
}

/**
 * A short real ingest on a scratch copy of the table (committed on the copy, which is dropped
 * afterwards) at a few rows a commit and connection counts: the flush time and bandwidth, server
 * time a row and a commit, and how commits group on this server, with how far estimateIngestCeiling
 * was from each run.
 *
 * @example
 * const calibration = await calibrateIngest({ db: url, table: 'device_metrics', cores: 2 })
 * estimateIngestCeiling(cost, { storage: calibration.storage, commitMs: calibration.commitMs, cores: 2, rowsPerCommit: 100 })
 */
export async function calibrateIngest(options: CalibrateIngestOptions): Promise<IngestCalibration> {
  return withDisplay(await calibrateIngestPlain(options))
}

/**
 * What a migration does to the write path: the batch measured on the table as it is and after the
 * migration (applied inside the measuring transaction and rolled back with it), compared part by
 * part, a new index or a trigger's table as its own line, with an A/A check.
 *
 * @example
 * const { summary } = await compareMigration({ db: url, table: 'orders', count: 10_000, migration: 'create index on orders (status)' })
 * console.log(summary) // "The migration adds 71.0 bytes a row (+24.0%) to inserts into "public"."orders": the new index ..."
 */
export async function compareMigration<Db extends Database | undefined = undefined>(
  options: MigrationOptions<Db>,
): Promise<MigrationComparison> {
  return withDisplay(await compareMigrationPlain(options))
}

/**
 * What a batch of any writes costs: INSERT, UPDATE, DELETE, INSERT ... ON CONFLICT and MERGE as
 * `sql`, or `update` / `delete` of chosen rows, or an `upsert` whose keys partly exist. The same contract as measureInsertCost (rolled
 * back, exact attribution), plus the rows modified and, for updates, HOT explained: how many were
 * HOT, and for the others whether an indexed column changed (naming the indexes) or the page had
 * no room.
 *
 * @example
 * const cost = await measureWriteCost({ db: url, table: 'orders', update: { rows: 500, set: { status: "'shipped'" } } })
 * console.log(cost.updates?.explanation) // "120 updates of 500 rows were HOT (24%): ...; 380 updates stayed on their page but changed a column of orders_status_idx, ..."
 */
export async function measureWriteCost<Db extends Database | undefined = undefined>(
  options: WriteOptions<Db>,
): Promise<WriteCost> {
  return withDisplay(await measureWriteCostPlain(options))
}

/**
 * The same write batch from identical starting states, each right after a checkpoint: as given,
 * without each index alone (which one costs HOT, and what that saves), and with the table rewritten
 * at each fillfactor (what free space on the pages buys), with an A/A check.
 *
 * @example
 * const { summary } = await compareWriteScenarios({ db: url, table: 'orders', update: { rows: 500, set: { status: "'shipped'" } } })
 * console.log(summary) // "full-page images are 71% of the WAL after a checkpoint (...). Of the indexes, dropping one alone saves most as without:orders_status ..."
 */
export async function compareWriteScenarios<Db extends Database | undefined = undefined>(
  options: WriteScenariosOptions<Db>,
): Promise<WriteScenarioComparison> {
  return withDisplay(await compareWriteScenariosPlain(options))
}

/**
 * The WAL of everything that happens between two positions, from every session, committed or not:
 * around `run` (any code: the window opens before it is called and closes once it settles) or for
 * `durationMs`. Read from the WAL itself and split by relation (each table, index, TOAST table and
 * sequence, named across rewrites and drops), with the WAL of no relation by kind, images by why
 * they were taken, and commits and aborts. A role that may not read WAL files gets the totals.
 *
 * @example
 * const observation = await observeWal({ db: pool, run: () => importOrders(pool) })
 * for (const relation of observation.relations ?? []) console.log(relation.schema, relation.name, relation.bytes)
 */
export async function observeWal(options: ObserveOptions): Promise<WalObservation<'server'>> {
  return withDisplay(await observeWalPlain(options))
}

/**
 * observeWal's result for WAL segment files read from disk, with no server needed: an archive
 * (pgBackRest, WAL-G, barman, archive_command) or a copy of pg_wal, found in every folder below
 * the ones given, plain or compressed (gzip, lz4, zstd, bzip2, brotli), `.partial`, along the
 * newest timeline's history. Every record's CRC is checked; a damaged file fails with
 * WAL_UNREADABLE naming it and the LSN (or is left out with `skipBad`). Relations are named through
 * `db`'s catalog, else listed by database and relfilenode.
 *
 * @example
 * const observation = await inspectWal({ dir: '/archive/wal', db: process.env.DATABASE_URL })
 * for (const relation of observation.relations ?? []) console.log(relation.name ?? relation.files[0]?.relfilenode, relation.bytes)
 */
export async function inspectWal(options: InspectOptions): Promise<WalObservation<'files'>> {
  return withDisplay(await inspectWalPlain(options))
}

/**
 * observeWal interval after interval until `signal` fires or `durationMs` passes: each interval's
 * observation to `onInterval` as it is read, the totals as the result. The intervals follow each
 * other without gap or overlap, and memory stays that of a few intervals however long it runs.
 *
 * @example
 * const controller = new AbortController()
 * const totals = await watchWal({ db: url, intervalMs: 1_000, signal: controller.signal, onInterval: (o) => console.log(o.window.bytes) })
 */
export async function watchWal(options: WatchOptions): Promise<WalObservation<'server'>> {
  return withDisplay(await watchWalPlain(options))
}

/**
 * Serves a server's WAL by relation to Prometheus at `/metrics`, read as watchWal reads it, for as
 * long as the process lives: counters by relation (at most `top` a database, the rest as
 * relation="other") that never go backwards, across lost connections and server restarts. Resolves
 * once it listens; `close()` stops it and leaves the server as it was.
 *
 * @example
 * const exporter = await serveWalMetrics({ db: process.env.DATABASE_URL, listen: '127.0.0.1:9399', labels: { server: 'db1' } })
 * console.log(exporter.url)
 * await exporter.close()
 */
export function serveWalMetrics(options: WalMetricsOptions): Promise<WalMetricsServer> {
  return serveWalMetricsPlain(options)
}
