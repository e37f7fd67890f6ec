import { describe, expect, it } from 'vitest'
import { estimateIngestCeiling, STORAGE_PRESETS } from '../../src/index.js'

// The ceiling's arithmetic, by hand: no server.
describe('estimateIngestCeiling', () => {
  it("does the field notes' arithmetic: 345 bytes a row at 50,000 rows/s is ~17 MB/s of WAL for 2 MB/s of data", () => {
    const ceiling = estimateIngestCeiling({ bytesPerRow: 345, dataBytesPerRow: 40 }, { targetRowsPerSec: 50_000 })
    expect(ceiling.walMBps).toBeCloseTo(17.25, 10)
    expect(ceiling.dataMBps).toBeCloseTo(2, 10)
    expect(ceiling.walGBPerDay).toBeCloseTo(17.25 * 86.4, 8)
    expect(ceiling.archiveGBPerDay).toBe(ceiling.walGBPerDay)
    expect(ceiling.storage).toEqual(STORAGE_PRESETS.gp3)
  })

  it('binds on commit flushes for single-row transactions on gp3, by hand: 1 connection x 1 row / 11 ms', () => {
    const ceiling = estimateIngestCeiling(
      { bytesPerRow: 345, dataBytesPerRow: 40 },
      { storage: 'gp3', targetRowsPerSec: 50_000 },
    )
    expect(ceiling.limits['commit flush latency']).toBeCloseTo(1000 / 11, 10)
    expect(ceiling.bindingLimit).toBe('commit flush latency')
    expect(ceiling.maxRowsPerSec).toBeCloseTo(90.909, 3)
    expect(ceiling.headroom).toBeCloseTo(90.909 / 50_000, 6)
  })

  it('binds on bandwidth once commits are batched, by hand: 125 MB/s over WAL plus new pages a row', () => {
    const storage = { writeMBps: 100, iops: 1e9, fsyncMs: 1 }
    const ceiling = estimateIngestCeiling(
      { bytesPerRow: 300, dataBytesPerRow: 40 },
      { storage, rowsPerCommit: 1_000, connections: 16 },
    )
    // Growth estimate for a bare figure: 40 + 28 + 150 bytes of new pages a row, so 518 bytes written a row.
    expect(ceiling.limits['write bandwidth']).toBeCloseTo(100e6 / 518, 6)
    expect(ceiling.bindingLimit).toBe('write bandwidth')
    expect(ceiling.headroom).toBeNull()
  })

  it('binds on IOPS when flushes are many and cheap, by hand', () => {
    const storage = { writeMBps: 1e6, iops: 3_000, fsyncMs: 0.01 }
    const ceiling = estimateIngestCeiling(
      { bytesPerRow: 300, dataBytesPerRow: 40 },
      { storage, rowsPerCommit: 1, connections: 2 },
    )
    expect(ceiling.limits.IOPS).toBeCloseTo(3_000 / (0.5 + 218 / 8192), 6)
    expect(ceiling.bindingLimit).toBe('IOPS')
  })

  it('refuses a cost without bytes per row, and an unknown preset', () => {
    expect(() => estimateIngestCeiling({ bytesPerRow: 0 })).toThrow(/bytesPerRow/)
    expect(() => estimateIngestCeiling({ bytesPerRow: 100 }, { storage: 'floppy' as never })).toThrow(/storage/)
  })
})
