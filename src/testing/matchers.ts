import { checkWalBudget, type WalBudget } from '../ci/budget.js'
import type { InsertCost } from '../measure/result.js'
import type { WriteCost } from '../measure/write.js'

interface MatcherResult {
  pass: boolean
  message: () => string
}

/**
 * `toStayWithinWalBudget(budget)` for vitest and jest: takes an InsertCost or a promise of one.
 *
 * @example
 * expect.extend(walcostMatchers)
 * await expect(measureInsertCost({ table: 'orders', count: 1_000, setup })).toStayWithinWalBudget({ bytesPerRow: 400 })
 */
export const walcostMatchers = {
  async toStayWithinWalBudget(
    received: InsertCost | WriteCost | Promise<InsertCost | WriteCost>,
    budget: WalBudget,
  ): Promise<MatcherResult> {
    const cost = await received
    const check = checkWalBudget(cost, budget)
    return { pass: check.pass, message: () => check.message }
  },
}
