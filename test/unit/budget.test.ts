import { describe, expect, it } from 'vitest'
import { checkWalBudget } from '../../src/index.js'
import { insertCost } from './fixtures.js'

describe('checkWalBudget', () => {
  const measured = insertCost.bytesPerRow ?? 0

  it('passes a budget above the measurement and fails one below it, naming the bound', () => {
    expect(checkWalBudget(insertCost, { bytesPerRow: measured + 1 }).pass).toBe(true)
    const check = checkWalBudget(insertCost, { bytesPerRow: measured - 1 })
    expect(check.pass).toBe(false)
    expect(check.violations).toEqual([{ bound: 'bytesPerRow', limit: measured - 1, measured }])
    expect(check.message).toContain('bytes/row by relation')
  })

  it('holds each index to its own bound', () => {
    const [index] = insertCost.indexes
    if (!index) throw new Error('the fixture has indexes')
    const check = checkWalBudget(insertCost, { indexes: { [index.name]: 0.5 } })
    expect(check.pass).toBe(false)
    expect(check.violations[0]?.bound).toContain(index.name)
  })

  it('refuses a budget with no bound', () => {
    expect(() => checkWalBudget(insertCost, {})).toThrow(/at least one bound/)
  })
})
