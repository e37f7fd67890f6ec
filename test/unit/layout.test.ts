import { describe, expect, it } from 'vitest'
import { type ColumnLayout, heapTupleSizes, indexTupleSize, logicalRowBytes } from '../../src/model/layout.js'

const fixed = (name: string, length: number): ColumnLayout => ({
  name,
  length,
  align: length === 8 ? 'd' : 'i',
  avgWidth: length,
  nullFraction: 0,
})

describe('layout', () => {
  it('sizes a heap tuple of fixed-width columns as PostgreSQL lays it out', () => {
    // 23-byte header aligned to 24, then int8, timestamptz, float8: t_len 48; the record MAXALIGN(48 + 31).
    const sizes = heapTupleSizes([fixed('id', 8), fixed('at', 8), fixed('value', 8)])
    expect(sizes).toEqual({ tupleLength: 48, onPage: 48, insertRecordAligned: 80 })
  })

  it('pads an int4 before an int8 and sizes the index tuple of both', () => {
    expect(heapTupleSizes([fixed('a', 4), fixed('b', 8)]).tupleLength).toBe(24 + 16)
    expect(indexTupleSize([fixed('a', 4), fixed('b', 8)])).toBe(24)
  })

  it('counts only non-null values as data', () => {
    expect(logicalRowBytes([fixed('a', 8), { ...fixed('b', 8), nullFraction: 0.5 }])).toBe(12)
  })
})
