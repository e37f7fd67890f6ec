export {
  auditIndexes,
  calibrateIngest,
  compareMigration,
  compareRemedies,
  compareScenarios,
  compareWriteScenarios,
  estimateIngestCeiling,
  fieldNotesExperiment,
  inspectWal,
  measureInsertCost,
  measureWriteCost,
  observeWal,
  predictInsertCost,
  serveWalMetrics,
  watchWal,
} from './api.js'
export {
  type BudgetCheck,
  type BudgetViolation,
  checkWalBudget,
  type SuggestBudgetOptions,
  suggestBudget,
  type WalBudget,
} from './ci/budget.js'
export { type SummaryOptions, type WalSummary, walSummary } from './ci/summary.js'
export type { AuditOptions, IndexAudit, IndexAuditResult } from './compare/audit.js'
export { type FieldNotesOptions, fieldNotesInsert, fieldNotesSetup } from './compare/field-notes.js'
export type {
  MigrationChange,
  MigrationComparison,
  MigrationOptions,
} from './compare/migration.js'
export type {
  RemediesOptions,
  Remedy,
  RemedyComparison,
  RemedyKind,
  SpacingPoint,
} from './compare/remedies.js'
export type {
  Decomposition,
  DecompositionPart,
  ScenarioComparison,
  ScenariosOptions,
} from './compare/scenarios.js'
export type {
  WriteScenarioComparison,
  WriteScenariosOptions,
} from './compare/write-scenarios.js'
export type { BatchDatabaseFor, Database } from './core/database.js'
export { WalcostError, type WalcostErrorCode } from './core/errors.js'
export type { MeasureOptions, Row, RowSource, RowsInput } from './core/options.js'
export type {
  Breakdown,
  IndexCost,
  InsertCost,
  OtherRelationCost,
  RecordTypeCost,
  RelationCost,
  Scenario,
  Skipped,
} from './measure/result.js'
export { rowsFromFile } from './measure/rows-file.js'
export type {
  DeferredCost,
  UpdateAnalysis,
  WriteCost,
  WriteOptions,
} from './measure/write.js'
export { calibrateStorage, type StorageCalibration } from './model/calibrate.js'
export type {
  CalibrateIngestOptions,
  IngestCalibration,
  IngestRun,
} from './model/calibrate-ingest.js'
export {
  type CeilingOptions,
  type CostInput,
  type IngestCeiling,
  type LimitName,
  STORAGE_PRESETS,
  type Storage,
  type StoragePreset,
} from './model/ceiling.js'
export type { TableDescription } from './model/planned-table.js'
export {
  comparePrediction,
  type IndexPrediction,
  type InsertCostPrediction,
  type PredictionComparison,
  type PredictOptions,
} from './model/predict.js'
export { formatResult } from './report/text.js'
export type { Result } from './report/views.js'
export { assertWalBudget } from './testing/assert.js'
export type { WalMetricsOptions, WalMetricsServer } from './traffic/exporter.js'
export type { InspectOptions } from './traffic/inspect.js'
export type {
  InspectedFiles,
  ObservedFile,
  ObservedRelation,
  RelationKind,
  WalObservation,
} from './traffic/observation.js'
export type { ObserveOptions } from './traffic/observe.js'
export type { WatchOptions } from './traffic/watch.js'
export type { BadFile, SkippedFile, WalGap } from './wal/archive.js'
export type { RecordTypeWal } from './wal/attribution.js'
export type {
  FpiReasons,
  ImageCount,
  TransactionCounts,
  UnattributedKind,
  UnattributedWal,
} from './wal/observe-tally.js'
export type { ArchiveProgress } from './wal/read-archive.js'
export type { ServerFacts } from './wal/server.js'
export type { StatWalCounters } from './wal/snapshot.js'
export type { StatementsWal, StatementWal } from './wal/statement-wal.js'
