import { AssertionError } from 'node:assert'
import { checkWalBudget, type WalBudget } from '../ci/budget.js'
import type { InsertCost } from '../measure/result.js'
import type { WriteCost } from '../measure/write.js'

/**
 * For node's own test runner (node --test) and any runner without matchers: throws an
 * AssertionError with the budget's message (the breakdown by relation) when the measurement
 * exceeds any bound.
 *
 * @example
 * test('orders stay cheap to insert', async () => {
 *   assertWalBudget(await measureInsertCost({ setup, table: 'orders', count: 1_000 }), { bytesPerRow: 400 })
 * })
 */
export function assertWalBudget(cost: InsertCost | WriteCost, budget: WalBudget): void {
  const check = checkWalBudget(cost, budget)
  if (check.pass) return
  const [first] = check.violations
  throw new AssertionError({
    message: check.message,
    actual: first?.measured ?? null,
    expected: first?.limit,
    operator: 'toStayWithinWalBudget',
  })
}
