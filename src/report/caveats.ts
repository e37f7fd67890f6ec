import type { InsertCost } from '../measure/result.js'
import type { WalSource } from '../wal/server.js'

/** Each step skipped in any of the runs, once, with its reason: what a reader must know of them. */
export function skippedSteps(costs: InsertCost[]): string[] {
  const lines = new Set<string>()
  for (const cost of costs) for (const skipped of cost.skipped) lines.add(`skipped ${skipped.step}: ${skipped.reason}`)
  return [...lines]
}

const WAL_SOURCES: Record<WalSource, string> = {
  replication: 'a replication stream',
  files: 'the segment files',
  walinspect: 'pg_walinspect',
  statements: "pg_stat_statements' WAL by statement",
  totals: 'the LSN and pg_stat_wal totals only',
}

/** Where a result's WAL came from, in words. */
export function walSourceText(source: WalSource): string {
  return WAL_SOURCES[source]
}
