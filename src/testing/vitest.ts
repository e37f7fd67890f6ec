import { expect } from 'vitest'
import type { WalBudget } from '../ci/budget.js'
import { walcostMatchers } from './matchers.js'

expect.extend(walcostMatchers)

interface WalcostMatchers<R = unknown> {
  /** Fails when the measurement (or the promise of one) exceeds any bound of the budget; the message shows the breakdown by relation. */
  toStayWithinWalBudget(budget: WalBudget): Promise<R>
}

declare module 'vitest' {
  // biome-ignore lint/suspicious/noExplicitAny: declaration merging needs vitest's own parameters.
  interface Matchers<T = any> extends WalcostMatchers<T> {}
}

export type { WalBudget }
export { walcostMatchers }
