import { z } from 'zod'
import { DEFAULT_SUMMARY_ROUND } from '../core/defaults.js'
import { parseOptions } from '../core/options.js'
import { partLabel, partsOf } from '../measure/parts.js'
import type { InsertCost } from '../measure/result.js'

/** Options of {@link walSummary}. */
export const summaryOptionsSchema = z.strictObject({
  round: z
    .number()
    .positive()
    .default(DEFAULT_SUMMARY_ROUND)
    .describe('Bytes per row are rounded to a multiple of this, so that a snapshot moves only when the cost does.'),
})

export type SummaryOptions = z.input<typeof summaryOptionsSchema>

/** A measurement reduced to what a snapshot or a baseline should hold: stable, rounded, by relation. */
export interface WalSummary {
  table: string
  rows: number
  method: InsertCost['scenario']['method']
  /** WAL bytes per row, rounded to a multiple of `round`. */
  bytesPerRow: number
  /** WAL records per row, to one decimal. */
  recordsPerRow: number | null
  /**
   * Bytes per row of each part, rounded like bytesPerRow: 'heap', 'index <name>', 'relation <name>',
   * 'full-page images', 'other'. Empty when the measurement could not split its WAL.
   */
  relations: Record<string, number>
}

/**
 * A stable, rounded summary of a measurement, for `expect(walSummary(cost)).toMatchSnapshot()` in
 * vitest or jest, and for the baselines `walcost check` records.
 *
 * @example
 * expect(walSummary(await measureInsertCost({ setup, table: 'orders', count: 1_000 }))).toMatchSnapshot()
 */
export function walSummary(cost: InsertCost, options: SummaryOptions = {}): WalSummary {
  const { round } = parseOptions(summaryOptionsSchema, options)
  const rows = cost.rows || 1
  const rounded = (bytes: number) => Math.round(bytes / rows / round) * round
  return {
    table: cost.scenario.table,
    rows: cost.rows,
    method: cost.scenario.method,
    bytesPerRow: rounded(cost.walBytes),
    recordsPerRow: cost.walRecords === null ? null : Math.round((10 * cost.walRecords) / rows) / 10,
    relations: Object.fromEntries((partsOf(cost) ?? []).map((part) => [partLabel(part), rounded(part.bytes)])),
  }
}
