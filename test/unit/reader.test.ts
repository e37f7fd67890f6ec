import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { type WalLayout, WalReader } from '../../src/decode/reader.js'
import { recordTypeName } from '../../src/decode/record-types.js'
import { WalcostError } from '../../src/index.js'

// A window of real WAL recorded on PGlite with pg_walinspect's reading of it
// (scripts/record-wal-window.ts): the reader, with no server.
const fixtures = new URL('./fixtures/', import.meta.url)
const window = JSON.parse(readFileSync(new URL('wal-window.json', fixtures), 'utf8')) as {
  layout: WalLayout
  start: number
  end: number
  readFrom: number
  walStats: Record<string, { records: number; recordBytes: number; fpiBytes: number }>
}
const bytes = new Uint8Array(gunzipSync(readFileSync(new URL('wal-window.bin.gz', fixtures))))

/** Reads the window fed in chunks of `size`, tallied by record type as pg_get_wal_stats tallies it. */
function read(size: number, wal = bytes) {
  const byType: Record<string, { records: number; recordBytes: number; fpiBytes: number }> = {}
  const lsns: number[] = []
  const reader = new WalReader({ ...window.layout, verifyCrc: true }, window.start, window.end, (record) => {
    const type = recordTypeName(record.rmid, record.info, window.layout.major)
    const entry = byType[type] ?? { records: 0, recordBytes: 0, fpiBytes: 0 }
    byType[type] = entry
    entry.records += 1
    entry.recordBytes += record.totalLength - record.imageBytes
    entry.fpiBytes += record.imageBytes
    lsns.push(record.lsn)
  })
  expect(reader.readFrom).toBe(window.readFrom)
  for (let at = 0; at < wal.length; at += size) reader.push(wal.subarray(at, at + size))
  reader.finish()
  return { byType, lsns }
}

describe('the WAL reader on a recorded window', () => {
  it('finds every record pg_walinspect found, by type, with the same record and image bytes', () => {
    const { byType, lsns } = read(bytes.length)
    expect(byType).toEqual(window.walStats)
    expect(lsns.length).toBeGreaterThan(500)
  })

  it('reads the same records however the bytes are cut', () => {
    const whole = read(bytes.length).lsns
    for (const size of [8192, 8192 + 13, 3 * 8192 - 1, 4_999, 257]) expect(read(size).lsns).toEqual(whole)
  })

  it('refuses a record whose bytes were changed, with WAL_UNREADABLE', () => {
    const flipped = bytes.slice()
    const at = window.start - window.readFrom + 4_000
    flipped[at] = (flipped[at] ?? 0) ^ 0x10
    let failure: unknown
    try {
      read(flipped.length, flipped)
    } catch (error) {
      failure = error
    }
    expect(failure).toBeInstanceOf(WalcostError)
    expect((failure as WalcostError).code).toBe('WAL_UNREADABLE')
  })
})
