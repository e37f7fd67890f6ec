import type { InsertCost } from '../measure/result.js'

/** Each step skipped in any of the runs, once, with its reason: what a reader must know of them. */
export function skippedSteps(costs: InsertCost[]): string[] {
  const lines = new Set<string>()
  for (const cost of costs) for (const skipped of cost.skipped) lines.add(`skipped ${skipped.step}: ${skipped.reason}`)
  return [...lines]
}
