// Results recorded on the embedded PGlite by scripts/record-fixtures.ts: real measurements, read
// here without a server so that renderers and pure functions are tested in milliseconds.
import { readFileSync } from 'node:fs'
import type {
  IndexAuditResult,
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
