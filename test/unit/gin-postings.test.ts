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

// A pending list's merge: the keys of the rows merged together, each written once with their TIDs (ginfast.c).
describe('predictGinPostings for rows merged together', () => {
  const window = { windowRows: 5_000, windowPages: 50, spreadRows: 5_000, tableRows: 50_000 }

  it('writes a key in every row once a merge, its TIDs compressed into the leaf', () => {
    const group = { occurrences: 5_000, spread: 45_000, keys: 1, tupleBytes: 16, deltaBytes: 1 }
    const alone = predictGinPostings({ ...window, groups: [group] }, 8192)
    const merged = predictGinPostings({ ...window, groups: [group] }, 8192, 1_000)
    // 1,000 TIDs of a byte each join the leaf's last segment (256 bytes): 1,256 bytes in 5 segments, logged whole.
    const insert = 60 - 8 + 1_256 + 4 * 10
    expect(merged.recordsPerRow - merged.splitsPerRow * 2).toBeCloseTo(1 / 1_000, 9)
    expect(merged.bytesPerRow - merged.splitsPerRow * 172).toBeCloseTo(insert / 1_000, 9)
    // The tree grows by the same TIDs, whichever way they come.
    expect(merged.splitsPerRow).toBeCloseTo(alone.splitsPerRow, 9)
  })

  it("writes a row's own new key once, with a tuple of its own", () => {
    // 5,000 keys each in one row of the window and in none before it: the rows' own values.
    const group = { occurrences: 1, spread: 0, keys: 5_000, tupleBytes: 48, deltaBytes: null }
    const merged = predictGinPostings({ ...window, groups: [group] }, 8192, 500)
    // Its TIDs 50 pages apart take 3 bytes: the move into a tree, two records, is a 885th of each once the list fills.
    const move = 2 / ((2712 - 48 - 8) / 3)
    expect(merged.recordsPerRow - merged.splitsPerRow * 2).toBeCloseTo(1 + move, 9)
    // Each new tuple (48 + a posting list's 8-byte header and its TID, MAXALIGNed) grows the entry tree by itself and its line pointer.
    expect(merged.splitsPerRow).toBeGreaterThan((48 + 8 + 4) / (Math.LN2 * 8160))
  })

  it('writes a key that recurs over the table once for each merge of rows it is in', () => {
    // 5,000 keys each in one row of the window and in 10 of the spread sample's: a key in 1 of 5,000 rows.
    const group = { occurrences: 1, spread: 10, keys: 5_000, tupleBytes: 16, deltaBytes: null }
    const alone = predictGinPostings({ ...window, groups: [group] }, 8192)
    const merged = predictGinPostings({ ...window, groups: [group] }, 8192, 20_000)
    const move = alone.recordsPerRow - alone.splitsPerRow * 2 - 1
    // In 20,000 rows merged together a key is in 4 on average, and 98% of keys are in at least one.
    const inserts = (5_000 * (1 - (1 - 1 / 5_000) ** 20_000)) / 20_000
    expect(merged.recordsPerRow - merged.splitsPerRow * 2).toBeCloseTo(inserts + move, 9)
  })
})
