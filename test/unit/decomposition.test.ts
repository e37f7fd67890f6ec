import { describe, expect, it } from 'vitest'
import { decompose, firstRunOf, scenarioName } from '../../src/compare/scenarios.js'
import { scenarios } from './fixtures.js'

describe('decompose', () => {
  const indexNames = scenarios.scenarios.steady?.indexes.map((index) => index.name) ?? []

  it("splits the first run's bytes a row into parts that add up to it", () => {
    const decomposition = decompose(scenarios.scenarios, indexNames)
    const first = firstRunOf(scenarios.scenarios)
    expect(decomposition.bytesPerRow).toBe(first?.bytesPerRow)
    const sum = decomposition.parts.reduce((total, part) => total + part.bytesPerRow!, 0)
    expect(sum).toBeCloseTo(decomposition.bytesPerRow, 6)
    expect(decomposition.parts.reduce((total, part) => total + part.share!, 0)).toBeCloseTo(1, 6)
    expect(decomposition).toEqual(scenarios.decomposition)
  })

  it('without attribution, reads each index from the run without it', () => {
    const unattributed = Object.fromEntries(
      Object.entries(scenarios.scenarios).map(([name, cost]) => [name, { ...cost, breakdown: null }]),
    )
    const decomposition = decompose(unattributed, indexNames)
    const steady = scenarios.scenarios.steady?.bytesPerRow ?? 0
    for (const index of indexNames) {
      const without = scenarios.scenarios[scenarioName({ kind: 'without-index', index })]
      const part = decomposition.parts.find((entry) => entry.name === index)
      if (without) expect(part?.bytesPerRow).toBeCloseTo(steady - (without.bytesPerRow ?? 0), 6)
      else expect(part).toBeUndefined()
    }
  })
})
