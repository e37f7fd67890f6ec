import { describe, expect, it } from 'vitest'
import type { WalRecord } from '../../src/decode/reader.js'
import { transactionEnd } from '../../src/decode/xact-record.js'

/** A Transaction record whose main data is `words` (uint32, little-endian) after the 8-byte xact_time. */
function xactRecord(info: number, xid: number, words: number[]): WalRecord {
  const bytes = new Uint8Array(8 + 4 * words.length)
  const view = new DataView(bytes.buffer)
  for (const [i, word] of words.entries()) view.setUint32(8 + 4 * i, word, true)
  return {
    lsn: 0x1000,
    totalLength: bytes.length,
    footprint: bytes.length,
    xid,
    topLevelXid: null,
    rmid: 1,
    info,
    imageBytes: 0,
    blocks: [],
    blockCount: 0,
    bytes,
    view,
    mainDataOffset: 0,
    mainDataLength: bytes.length,
  }
}

const HAS_INFO = 0x80
const DBINFO = 1
const SUBXACTS = 2
const FILES = 4
const INVALS = 8
const TWOPHASE = 16
const DROPPED_STATS = 256

describe('transactionEnd', () => {
  it('reads a plain commit, which has no parts', () => {
    expect(transactionEnd(xactRecord(0x00, 700, []), 18)).toEqual({
      committed: true,
      xid: 700,
      subxacts: [],
      dropped: [],
    })
  })

  it("reads a commit's subtransactions and dropped files past its database", () => {
    const record = xactRecord(HAS_INFO, 700, [DBINFO | SUBXACTS | FILES, 5, 1663, 2, 701, 702, 1, 1663, 5, 16384])
    expect(transactionEnd(record, 18)).toEqual({
      committed: true,
      xid: 700,
      subxacts: [701, 702],
      dropped: [{ tablespace: 1663, database: 5, relNumber: 16384 }],
    })
  })

  it("finds ROLLBACK PREPARED's transaction past the dropped statistics, whose entries 18 widened", () => {
    const stats = (size: number) => [1, ...Array.from({ length: size / 4 }, () => 9)]
    for (const [major, size] of [
      [17, 12],
      [18, 16],
    ] as const) {
      const record = xactRecord(0x40 | HAS_INFO, 0, [DROPPED_STATS | TWOPHASE, ...stats(size), 812])
      expect(transactionEnd(record, major)).toMatchObject({ committed: false, xid: 812 })
    }
  })

  it('skips a commit prepared’s invalidation messages, which an abort does not have', () => {
    const record = xactRecord(0x30 | HAS_INFO, 0, [INVALS | TWOPHASE, 1, 0, 0, 0, 0, 900])
    expect(transactionEnd(record, 16)).toMatchObject({ committed: true, xid: 900 })
  })

  it('ignores the other Transaction records, and refuses one shorter than its flags say', () => {
    expect(transactionEnd(xactRecord(0x50, 700, [700, 0]), 18)).toBeNull()
    expect(() => transactionEnd(xactRecord(HAS_INFO, 700, [SUBXACTS, 3, 701]), 18)).toThrow(/shorter than its flags/)
  })
})
