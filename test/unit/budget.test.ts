import { describe, expect, it } from 'vitest'
import { checkWalBudget, suggestBudget } from '../../src/index.js'
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

describe('suggestBudget', () => {
  const rows = insertCost.rows

  it('allows what was measured plus the headroom, rounded up, for the whole and each index', () => {
    const budget = suggestBudget(insertCost, { headroom: 0.2 })
    expect(budget.bytesPerRow).toBe(Math.ceil((insertCost.bytesPerRow ?? 0) * 1.2))
    expect(Object.keys(budget.indexes ?? {})).toEqual(insertCost.indexes.map((index) => index.name))
    for (const index of insertCost.indexes)
      expect(budget.indexes?.[index.name]).toBe(Math.ceil((index.walBytes / rows) * 1.2))
  })

  it('passes the measurement it came from, and fails one that costs more than the headroom', () => {
    const budget = suggestBudget(insertCost)
    expect(checkWalBudget(insertCost, budget).pass).toBe(true)
    const grown = { ...insertCost, bytesPerRow: (insertCost.bytesPerRow ?? 0) * 1.25 }
    expect(checkWalBudget(grown, budget).violations.map((violation) => violation.bound)).toEqual(['bytesPerRow'])
  })

  it('refuses a negative headroom, naming it', () => {
    expect(() => suggestBudget(insertCost, { headroom: -0.1 })).toThrow(expect.objectContaining({ field: 'headroom' }))
  })
})
