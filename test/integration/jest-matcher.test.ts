import { createRequire } from 'node:module'
import { expect as jestExpect } from 'expect'
import { describe, expect, it } from 'vitest'
import { measureInsertCost } from '../../src/index.js'
import type {} from '../../src/testing/jest.js'

// walcost/jest registers on jest's global expect (the 'expect' package); here it is installed as
// the global the way jest does, and the built CommonJS entry is required as a setup file would.
describe('walcost/jest', () => {
  it('registers toStayWithinWalBudget on the global expect, typed for expect 30', async () => {
    const globals = globalThis as { expect?: unknown }
    const previous = globals.expect
    globals.expect = jestExpect
    try {
      createRequire(import.meta.url)('../../dist/jest.cjs')
    } finally {
      globals.expect = previous
    }
    const cost = await measureInsertCost({ setup: 'create table j (id int8 primary key)', table: 'j', count: 200 })
    await jestExpect(cost).toStayWithinWalBudget({ bytesPerRow: 10_000 })
    await expect(jestExpect(cost).toStayWithinWalBudget({ bytesPerRow: 1 })).rejects.toThrow(
      /over the WAL budget: bytesPerRow/,
    )
  })
})
