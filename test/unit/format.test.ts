import { describe, expect, it } from 'vitest'
import {
  counted,
  integer,
  oneDecimal,
  percent,
  perSecond,
  ratesInOneUnit,
  shareOf,
  size,
  sizesInOneUnit,
} from '../../src/core/format.js'

describe('format', () => {
  it('writes counts with thousands separators and the right number of the noun', () => {
    expect(counted(1, 'row')).toBe('1 row')
    expect(counted(0, 'row')).toBe('0 rows')
    expect(counted(1_000, 'full-page image')).toBe('1,000 full-page images')
    expect(counted(2, 'index', 'indexes')).toBe('2 indexes')
  })

  it('rounds to whole numbers or one decimal, and marks unknown values', () => {
    expect(integer(1_234_567.6)).toBe('1,234,568')
    expect(oneDecimal(1_234.56)).toBe('1,234.6')
    expect(oneDecimal(null)).toBe('-')
    expect(percent(0.594)).toBe('59%')
    expect(shareOf(1, 0)).toBe('-')
  })

  it('picks a unit that keeps a size or a rate readable', () => {
    expect(size(812)).toBe('812 bytes')
    expect(size(81_234)).toBe('81.2 kB')
    expect(size(41_812_345)).toBe('41.8 MB')
    expect(perSecond(17.25)).toBe('17.3 MB/s')
    expect(perSecond(0.027)).toBe('27 kB/s')
  })

  it('writes a column of sizes or rates in the unit of its largest, small values not as zero', () => {
    const sizes = sizesInOneUnit(1_627_600)
    expect([sizes(1_627_600), sizes(7_276), sizes(12)]).toEqual(['1,627.6 kB', '7.3 kB', '0.012 kB'])
    expect(sizesInOneUnit(812)(812)).toBe('812 bytes')
    const rates = ratesInOneUnit(200_000)
    expect([rates(200_000), rates(88_000)]).toEqual(['0.2 MB/s', '0.088 MB/s'])
    expect(ratesInOneUnit(88_000)(88_000)).toBe('88.0 kB/s')
  })
})
