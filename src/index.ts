export {
  auditIndexes,
  calibrateIngest,
  compareMigration,
  compareRemedies,
  compareScenarios,
  compareWriteScenarios,
  estimateIngestCeiling,
  fieldNotesExperiment,
  measureInsertCost,
  measureWriteCost,
  predictInsertCost,
} from './api.js'
export { type BudgetCheck, type BudgetViolation, checkWalBudget, type WalBudget, walBudgetSchema } from './budget.js'
export { type DemoOptions, demoOptionsSchema, fieldNotesInsert, fieldNotesSetup } from './demo.js'
export type { Database } from './driver/types.js'
export { WalcostError, type WalcostErrorCode } from './errors.js'
export { type AuditOptions, auditOptionsSchema, type IndexAudit, type IndexAuditResult } from './measure/audit.js'
export {
  type MigrationChange,
  type MigrationComparison,
  type MigrationOptions,
  migrationOptionsSchema,
} from './measure/migration.js'
export {
  type RemediesOptions,
  type Remedy,
  type RemedyComparison,
  type RemedyKind,
  remediesOptionsSchema,
  type SpacingPoint,
} from './measure/remedies.js'
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
export {
  type CompareOptions,
  compareOptionsSchema,
  type Decomposition,
  type DecompositionPart,
  type ScenarioComparison,
} from './measure/scenarios.js'
export {
  type DeferredCost,
  type UpdateAnalysis,
  type WriteCost,
  type WriteOptions,
  writeOptionsSchema,
} from './measure/write.js'
export {
  type WriteScenarioComparison,
  type WriteScenariosOptions,
  writeScenariosOptionsSchema,
} from './measure/write-scenarios.js'
export { calibrateStorage, type StorageCalibration } from './model/calibrate.js'
export {
  type CalibrateIngestOptions,
  calibrateIngestOptionsSchema,
  type IngestCalibration,
  type IngestRun,
} from './model/calibrate-ingest.js'
export {
  type CeilingOptions,
  type CostInput,
  ceilingOptionsSchema,
  type IngestCeiling,
  type LimitName,
  STORAGE_PRESETS,
  type Storage,
  type StoragePreset,
  storageSchema,
} from './model/ceiling.js'
export {
  comparePrediction,
  type IndexPrediction,
  type InsertCostPrediction,
  type PredictionComparison,
  type PredictOptions,
  predictOptionsSchema,
  type TableDescription,
  tableDescriptionSchema,
} from './model/predict.js'
export { type MeasureOptions, measureOptionsSchema, type Row, type RowSource, type RowsInput } from './options.js'
export { toHtmlReport } from './report/html-report.js'
export { toHtml, toMarkdown, toVegaLite, withDisplay } from './report/render.js'
export { formatAudit, formatComparison, formatInsertCost, formatResult, formatScenarios } from './report/text.js'
export type { Result, View } from './report/views.js'
export { rowsFromFile } from './rows-file.js'
export { type SummaryOptions, summaryOptionsSchema, type WalSummary, walSummary } from './summary.js'
export { assertWalBudget } from './testing/assert.js'
export type { ServerFacts } from './wal/server.js'
export type { StatWalCounters } from './wal/snapshot.js'
