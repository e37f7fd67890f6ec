import { AssertionError } from 'node:assert'
import { describe, expect, it } from 'vitest'
import { assertWalBudget, walSummary } from '../../src/index.js'
import { insertCost, scenarios } from './fixtures.js'

describe('walSummary', () => {
  it('rounds bytes per row to a multiple of round, by relation, and keeps nothing that varies run to run', () => {
    const summary = walSummary(insertCost, { round: 10 })
    expect(Object.keys(summary)).toEqual(['table', 'rows', 'method', 'bytesPerRow', 'recordsPerRow', 'relations'])
    expect(summary.rows).toBe(insertCost.rows)
    expect(summary.bytesPerRow % 10).toBe(0)
    expect(Math.abs(summary.bytesPerRow - (insertCost.bytesPerRow ?? 0))).toBeLessThanOrEqual(5)
    for (const value of Object.values(summary.relations)) expect(value % 10).toBe(0)
    expect(Object.keys(summary.relations)).toEqual(expect.arrayContaining(['heap', 'full-page images', 'other']))
    expect(JSON.stringify(summary)).not.toMatch(/lsn|durationMs|window/i)
  })

  it('is the same for runs that differ only by noise below the rounding', () => {
    const steady = scenarios.scenarios.steady
    if (!steady) throw new Error('the fixture has a steady run')
    const nudged = { ...steady, walBytes: steady.walBytes + 2 }
    expect(walSummary(nudged, { round: 10 }).bytesPerRow).toBe(walSummary(steady, { round: 10 }).bytesPerRow)
  })
})

describe('assertWalBudget', () => {
  it('passes within the budget and throws an AssertionError with the breakdown over it', () => {
    const measured = insertCost.bytesPerRow ?? 0
    expect(() => assertWalBudget(insertCost, { bytesPerRow: measured + 1 })).not.toThrow()
    let thrown: unknown
    try {
      assertWalBudget(insertCost, { bytesPerRow: 10 })
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(AssertionError)
    expect((thrown as AssertionError).message).toMatch(
      /^over the WAL budget: bytesPerRow [\d.]+ > 10\n {2}bytes\/row by relation: heap/,
    )
  })
})
