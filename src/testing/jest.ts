import type {} from 'expect'
import type { WalBudget } from '../ci/budget.js'
import { walcostMatchers } from './matchers.js'

type Extendable = { extend(matchers: Record<string, unknown>): void }
const jestExpect = (globalThis as { expect?: Extendable }).expect
if (!jestExpect?.extend) {
  throw new Error(
    'walcost/jest: no global expect to extend. Import it from a jest setup file (setupFilesAfterEnv), or call expect.extend(walcostMatchers) yourself.',
  )
}
jestExpect.extend(walcostMatchers)

interface WalcostMatchers<R> {
  /** Fails when the measurement (or the promise of one) exceeds any bound of the budget; the message shows the breakdown by relation. */
  toStayWithinWalBudget(budget: WalBudget): Promise<R>
}

// Type parameters as @types/jest (global jest.Matchers) and expect 30 (@jest/globals) declare them.
declare global {
  namespace jest {
    // biome-ignore lint/complexity/noBannedTypes: declaration merging needs @types/jest's own parameters.
    interface Matchers<R, T = {}> extends WalcostMatchers<R> {}
  }
}

declare module 'expect' {
  interface Matchers<R extends void | Promise<void>, T = unknown> extends WalcostMatchers<R> {}
}

export type { WalBudget }
export { walcostMatchers }
