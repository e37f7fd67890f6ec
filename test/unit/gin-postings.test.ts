import { describe, expect, it } from 'vitest'
import { ginMaxItemSize, predictGinPostings } from '../../src/model/gin-postings.js'

// The record arithmetic of GIN without a pending list, from ginxlog.h and ginpostinglist.c.
describe('predictGinPostings', () => {
  const window = { windowRows: 5_000, windowPages: 50, spreadRows: 5_000, tableRows: 50_000 }

  it('takes GinMaxItemSize as a third of an 8 kB page, MAXALIGNed down', () => {
    expect(ginMaxItemSize(8192)).toBe(2712)
  })

  it("rewrites a key's entry tuple with its whole posting list: 52 bytes of record and the tuple", () => {
    // 1,000 keys in 5 of the window's rows and 45 of the spread sample's: 5 + 45 * 45,000 / 5,000 = 410 TIDs of 3 bytes.
    const cost = predictGinPostings(
      { ...window, groups: [{ occurrences: 5, spread: 45, keys: 1_000, tupleBytes: 16, deltaBytes: 3 }] },
      8192,
    )
    const tuple = 16 + 8 + 1_232
    // The move into a posting tree, once 896 TIDs have filled the list: CREATE_PTREE with the list, and the new entry tuple.
    const move = (53 + 2712 + 52 + 16) / ((2712 - 24) / 3)
    expect(cost.rewrittenTuple).toBe(tuple)
    expect(cost.treeShare).toBe(0)
    expect(cost.bytesPerRow - cost.splitsPerRow * 172).toBeCloseTo(52 + tuple + move, 6)
    expect(cost.splitsPerRow).toBeCloseTo(3 / (Math.LN2 * 8160), 9)
    expect(cost.imageBytesPerRow).toBeCloseTo(cost.splitsPerRow * 8192, 9)
  })

  it('appends a TID to the posting tree of a key past GinMaxItemSize: 60 bytes', () => {
    const cost = predictGinPostings(
      { ...window, groups: [{ occurrences: 1_000, spread: 9_000, keys: 5, tupleBytes: 16, deltaBytes: 1.5 }] },
      8192,
    )
    expect(cost.treeShare).toBe(1)
    expect(cost.bytesPerRow - cost.splitsPerRow * 172).toBeCloseTo(60, 9)
    expect(cost.recordsPerRow - cost.splitsPerRow * 2).toBeCloseTo(1, 9)
  })
})
