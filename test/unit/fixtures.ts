// Results recorded on the embedded PGlite by scripts/record-fixtures.ts: real measurements, read
// here without a server so that renderers and pure functions are tested in milliseconds.
import { readFileSync } from 'node:fs'
import type {
  IndexAuditResult,
  IngestCalibration,
  InsertCost,
  RemedyComparison,
  ScenarioComparison,
  WalObservation,
  WriteScenarioComparison,
} from '../../src/index.js'

const read = <T>(name: string): T => JSON.parse(readFileSync(new URL(`fixtures/${name}.json`, import.meta.url), 'utf8'))

export const insertCost = read<InsertCost>('insert-cost')
export const scenarios = read<ScenarioComparison>('scenarios')
export const indexAudit = read<IndexAuditResult>('index-audit')
export const remedies = read<RemedyComparison>('remedies')
export const writeScenarios = read<WriteScenarioComparison>('write-scenarios')
export const walObservation = read<WalObservation>('wal-observation')

/** A calibration's run: what it achieved and what the model estimated for it. */
const calibrationRun = (
  rowsPerCommit: number,
  connections: number,
  rowsPerSec: number,
  estimatedRowsPerSec: number,
) => ({
  rowsPerCommit,
  connections,
  seconds: 2,
  rows: rowsPerSec * 2,
  commits: (rowsPerSec * 2) / rowsPerCommit,
  flushes: 100,
  rowsPerSec,
  bytesPerRow: 300,
  flushMs: 0.2,
  commitsPerFlush: 1,
  transactionMs: 1,
  clientCpuMs: 0.1,
  estimatedRowsPerSec,
  bindingLimit: 'server CPU' as const,
  ratio: estimatedRowsPerSec / rowsPerSec,
})
/** A calibrateIngest result made here (it needs a real server): two runs, each estimate beside what it achieved. */
export const calibration: IngestCalibration = {
  kind: 'ingest-calibration',
  table: '"public"."t"',
  storage: { writeMBps: 900, iops: 200_000, fsyncMs: 0.2 },
  msPerRow: 0.01,
  commitMs: 0.1,
  clientMsPerRow: 0.002,
  clientMsPerCommit: 0.2,
  cores: 2,
  parallelism: { connections: 4, singleRowsPerSec: 100_000, parallelRowsPerSec: 130_000, speedup: 1.3 },
  rounds: 3,
  runs: [calibrationRun(100, 1, 60_000, 63_000), calibrationRun(1_000, 4, 86_082, 79_000)],
  worstError: 0.08,
  notes: [],
}
