import { z } from 'zod'
import { DEFAULT_BUDGET_HEADROOM } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { counted, oneDecimal } from '../core/format.js'
import { nearest } from '../core/nearest.js'
import { parseOptions } from '../core/options.js'
import { type Part, partLabel, partsOf } from '../measure/parts.js'
import { bytesPerChangedRow, changedRows, type InsertCost } from '../measure/result.js'
import type { WriteCost } from '../measure/write.js'

const bound = z.number().nonnegative()

/**
 * Upper bounds on a measurement, for tests and CI. Every bound is optional; give at least one.
 *
 * @example
 * const budget: WalBudget = { bytesPerRow: 400, indexes: { orders_customer_idx: 100 } }
 */
export const walBudgetSchema = z
  .strictObject({
    bytesPerRow: bound.optional().describe('WAL bytes per inserted row.'),
    amplification: bound.optional().describe('WAL bytes per byte of column data.'),
    recordsPerRow: bound.optional().describe('WAL records per inserted row.'),
    indexBytesPerRow: bound.optional().describe('Index record bytes per row, all indexes together (images excluded).'),
    fpiBytes: bound.optional().describe('Full-page image bytes of the whole batch.'),
    indexes: z.record(z.string(), bound).optional().describe('Per index: its WAL bytes per row, images included.'),
    bytesPerModifiedRow: bound
      .optional()
      .describe('WAL bytes per row inserted, updated or deleted (measureWriteCost; any batch).'),
    hotShare: z
      .number()
      .min(0)
      .max(1)
      .optional()
      .describe('The least share of updates that must be HOT (a lower bound, 0 to 1; measureWriteCost).'),
  })
  .refine((budget) => Object.values(budget).some((value) => value !== undefined), {
    message: 'give at least one bound',
    path: ['bytesPerRow'],
  })

export type WalBudget = z.input<typeof walBudgetSchema>

export interface BudgetViolation {
  bound: string
  limit: number
  measured: number | null
}

export interface BudgetCheck {
  pass: boolean
  violations: BudgetViolation[]
  /** What was measured against the budget, with the breakdown by relation: short enough for a test report. */
  message: string
}

const round = (value: number | null) => (value === null ? 'unknown' : oneDecimal(value))

/**
 * Holds a measurement against a budget. A bound whose value cannot be measured (no pg_walinspect
 * for the split) fails, so a budget never passes by not looking. A bound on an index the table
 * does not have (or that was dropped for the measurement) is INVALID_OPTIONS: no measurement could
 * hold it.
 *
 * @example
 * const { pass, message } = checkWalBudget(cost, { bytesPerRow: 400 })
 * if (!pass) throw new Error(message)
 */
export function checkWalBudget(cost: InsertCost | WriteCost, budget: WalBudget): BudgetCheck {
  const limits = parseOptions(walBudgetSchema, budget)
  const rows = changedRows(cost.writes) || null
  const perRow = (value: number | null | undefined) =>
    value === null || value === undefined || rows === null ? null : value / rows
  const measured: Record<string, number | null> = {
    bytesPerRow: cost.bytesPerRow,
    amplification: cost.amplification,
    recordsPerRow: perRow(cost.walRecords),
    indexBytesPerRow: perRow(cost.breakdown?.indexBytes),
    fpiBytes: cost.breakdown?.fpiBytes ?? null,
    bytesPerModifiedRow: bytesPerChangedRow(cost),
  }
  const violations: BudgetViolation[] = []
  for (const [name, limit] of Object.entries(limits)) {
    if (name === 'indexes' || name === 'hotShare' || typeof limit !== 'number') continue
    const value = measured[name] ?? null
    if (value === null || value > limit) violations.push({ bound: name, limit, measured: value })
  }
  for (const [name, limit] of Object.entries(limits.indexes ?? {})) {
    const index = cost.indexes.find((entry) => entry.name === name)
    if (!index) refuseMissingIndex(cost, name)
    const value = index ? perRow(index.walBytes) : null
    if (value === null || value > limit) violations.push({ bound: `indexes.${name}`, limit, measured: value })
  }
  if (limits.hotShare !== undefined) {
    // A lower bound: updates must stay HOT. A batch that updated nothing has no share to hold.
    const share = 'updates' in cost && cost.updates ? cost.updates.hotShare : null
    if (share === null || share < limits.hotShare)
      violations.push({ bound: 'hotShare', limit: limits.hotShare, measured: share })
  }
  return { pass: violations.length === 0, violations, message: budgetMessage(cost, violations) }
}

/**
 * A budget's index the measurement cannot have: the table has no such index, or it was dropped
 * for the batch. Returns where the split by relation is unknown, so the index may well exist (its
 * bound then fails as unmeasured).
 */
function refuseMissingIndex(cost: InsertCost | WriteCost, name: string): void {
  const field = `indexes.${name}`
  if (cost.scenario.droppedIndexes.includes(name)) {
    throw new WalcostError(
      'INVALID_OPTIONS',
      `budget ${field}: ${name} was dropped for this measurement (dropIndexes), so it wrote nothing to hold to a bound. Leave it out of the budget, or out of dropIndexes.`,
      { field },
    )
  }
  if (cost.breakdown === null) return
  const names = cost.indexes.map((index) => index.name)
  const near = nearest(name, names)
  throw new WalcostError(
    'INVALID_OPTIONS',
    `budget ${field}: ${cost.scenario.table} has no index ${name} (its indexes: ${names.join(', ') || 'none'}).${near ? ` Did you mean ${near}?` : ''} Name an index of the table in the budget (walcost.config.json's budget.indexes for walcost check).`,
    { field },
  )
}

/** One violation as the budget's message and walcost check print it. */
export function violationText(violation: BudgetViolation): string {
  const sign = violation.bound === 'hotShare' ? '<' : '>'
  return `${violation.bound} ${round(violation.measured)} ${sign} ${violation.limit}`
}

function budgetMessage(cost: InsertCost | WriteCost, violations: BudgetViolation[]): string {
  const rows = changedRows(cost.writes) || 1
  const head =
    violations.length === 0
      ? `within the WAL budget: ${round(cost.bytesPerRow)} bytes/row`
      : `over the WAL budget: ${violations.map(violationText).join(', ')}`
  // An index is shown with its images, as the `indexes` bound counts it.
  const withImages = (part: Part) =>
    part.kind === 'index'
      ? (cost.indexes.find((index) => index.name === part.name)?.walBytes ?? part.bytes)
      : part.bytes
  const split = partsOf(cost)
  const parts = split
    ? split.map((part) => `${partLabel(part)} ${round(withImages(part) / rows)}`).join(', ')
    : `no split by relation (${cost.attributionNote ?? 'attribution unavailable'})`
  const hot = 'updates' in cost && cost.updates ? `\n  ${cost.updates.explanation}` : ''
  const what =
    cost.kind === 'write-cost'
      ? `${counted(rows, 'row')} changed (${cost.scenario.batch}`
      : `${counted(cost.rows, 'row')} (${cost.scenario.batch}, ${cost.scenario.method}`
  return `${head}${hot}\n  bytes/row by relation: ${parts}\n  ${cost.scenario.table}, ${what}${cost.scenario.checkpoint ? ', after CHECKPOINT' : ''})`
}

/** Options of {@link suggestBudget}. */
export const suggestBudgetOptionsSchema = z.strictObject({
  headroom: z
    .number()
    .min(0)
    .max(10)
    .default(DEFAULT_BUDGET_HEADROOM)
    .describe('Room over what was measured, as a fraction: 0.2 allows 20% more.'),
})

export type SuggestBudgetOptions = z.input<typeof suggestBudgetOptionsSchema>

/**
 * A budget for a measurement: its WAL bytes a row (per modified row for updates and deletes) and
 * each index's, with `headroom` over what was measured, rounded up to whole bytes. Write it into
 * the test or walcost.config.json; a change that costs more than the headroom then fails.
 *
 * @example
 * const cost = await measureInsertCost({ setup, table: 'orders', count: 1_000 })
 * const budget = suggestBudget(cost, { headroom: 0.2 }) // { bytesPerRow, indexes: { orders_customer_idx, orders_pkey } }
 * await expect(cost).toStayWithinWalBudget(budget)
 */
export function suggestBudget(cost: InsertCost | WriteCost, options: SuggestBudgetOptions = {}): WalBudget {
  const { headroom } = parseOptions(suggestBudgetOptionsSchema, options)
  const rows = changedRows(cost.writes)
  const allowed = (perRow: number) => Math.ceil(perRow * (1 + headroom))
  const inserts = cost.writes.updated === 0 && cost.writes.deleted === 0 && cost.bytesPerRow !== null
  const whole = inserts ? cost.bytesPerRow : bytesPerChangedRow(cost)
  if (whole === null || rows === 0) {
    throw new WalcostError(
      'INVALID_OPTIONS',
      'cost: the measurement changed no row, so there is no cost a row to budget.',
      {
        field: 'cost',
      },
    )
  }
  // Without a split by relation the indexes are unknown (cost.indexes is empty): the total alone.
  const indexes = Object.fromEntries(cost.indexes.map((index) => [index.name, allowed(index.walBytes / rows)]))
  return {
    ...(inserts ? { bytesPerRow: allowed(whole) } : { bytesPerModifiedRow: allowed(whole) }),
    ...(cost.indexes.length > 0 ? { indexes } : {}),
  }
}
