import { describe, expect, it } from 'vitest'
import { estimateIngestCeiling } from '../../src/model/ceiling.js'

const storage = { writeMBps: 200, iops: 1e9, fsyncMs: 0.2 }

describe('the ingest ceiling, by hand', () => {
  it("adds a connection's work and its flush: one row a commit, one connection", () => {
    const ceiling = estimateIngestCeiling({ bytesPerRow: 300, msPerRow: 0.004 }, { storage, commitMs: 0.1 })
    // The flush writes the commit's 300 bytes at 200 MB/s: 1.5 microseconds on top of 0.2 ms.
    expect(ceiling.flushMs).toBeCloseTo(0.2015, 10)
    expect(ceiling.transactionMs).toBeCloseTo(0.104, 10)
    expect(ceiling.limits['commit flush latency']).toBeCloseTo(1000 / 0.2015, 6)
    expect(ceiling.limits['server CPU']).toBeCloseTo(1000 / 0.104, 6)
    expect(ceiling.bindingLimit).toBe('commit flush latency')
    expect(ceiling.maxRowsPerSec).toBeCloseTo(1000 / (0.104 + 0.2015), 6)
  })

  it('bounds the sessions running at once by the cores', () => {
    const cost = { bytesPerRow: 300, msPerRow: 0.005 }
    const ceiling = estimateIngestCeiling(cost, { storage, rowsPerCommit: 1_000, connections: 4, cores: 2 })
    expect(ceiling.limits['server CPU']).toBeCloseTo((2 * 1_000 * 1000) / 5, 6)
    expect(ceiling.bindingLimit).toBe('server CPU')
    expect(ceiling.maxRowsPerSec).toBeCloseTo(400_000, 6)
    const unbounded = estimateIngestCeiling(cost, { storage, rowsPerCommit: 1_000, connections: 4 })
    expect(unbounded.limits['server CPU']).toBeCloseTo(800_000, 6)
    expect(unbounded.assumptions.join(' ')).toContain('cores not given')
  })

  it('groups commits as measured, or as flushes one at a time allow', () => {
    const cost = { bytesPerRow: 300, msPerRow: 0.004 }
    const measured = estimateIngestCeiling(cost, { storage, connections: 4, commitsPerFlush: 1.9, commitMs: 0.1 })
    expect(measured.limits['commit flush latency']).toBeCloseTo((1.9 * 1000) / 0.2015, 6)
    // 0.104 ms of work fits in one 0.2015 ms flush: a commit waits for the flush running, then its own.
    const modelled = estimateIngestCeiling(cost, { storage, connections: 4, commitMs: 0.1 })
    expect(modelled.commitsPerFlush).toBe(2)
    expect(estimateIngestCeiling(cost, { storage }).commitsPerFlush).toBe(1)
  })

  it('says the CPU limit is unknown without a server time a row, and leaves it out of the ceiling', () => {
    const ceiling = estimateIngestCeiling({ bytesPerRow: 300 }, { storage, connections: 4 })
    expect(ceiling.limits['server CPU']).toBeNull()
    expect(ceiling.msPerRow).toBeNull()
    expect(ceiling.commitsPerFlush).toBe(4)
    expect(ceiling.bindingLimit).toBe('commit flush latency')
    expect(ceiling.maxRowsPerSec).toBeCloseTo((4 * 1000) / 0.2015, 6)
    expect(ceiling.assumptions.join(' ')).toMatch(/server CPU: unknown/)
  })

  it('refuses a time a row that is not positive', () => {
    expect(() => estimateIngestCeiling({ bytesPerRow: 300, msPerRow: 0 })).toThrow(/msPerRow/)
  })
})
