import { describe, expect, it } from 'vitest'
import { estimateIngestCeiling, STORAGE_PRESETS } from '../../src/index.js'
import { wakeupWaitMaxMs } from '../../src/model/ceiling.js'

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
    // The flush also writes the commit's 345 bytes at 125 MB/s.
    const flushMs = 11 + 345 / 125_000
    expect(ceiling.limits['commit flush latency']).toBeCloseTo(1000 / flushMs, 10)
    expect(ceiling.limits['server CPU']).toBeNull()
    expect(ceiling.bindingLimit).toBe('commit flush latency')
    expect(ceiling.maxRowsPerSec).toBeCloseTo(1000 / flushMs, 6)
    expect(ceiling.headroom).toBeCloseTo(1000 / flushMs / 50_000, 6)
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

const storage = { writeMBps: 200, iops: 1e9, fsyncMs: 0.2 }

/** A station by hand: ms a transaction, servers, and either 'held' (a lock held while working) or a flush's core waits a transaction. */
type ByHand = [number, number, ('held' | number)?]

/**
 * Transactions a ms, by hand: `sessions` that each pass every station, the cores first. A station
 * of several servers is a queue of ms / servers and a delay of the rest; a lock held while working
 * adds only the wait for the sessions ahead, and holds its own ms; a flush's service grows by the
 * wait at the cores, once a flush, up to a scheduler slice (1.5 ms on the 2 cores of these tests).
 */
function meanValueAnalysis(sessions: number, stations: ByHand[]): number {
  const queued = stations.map(() => 0)
  let perMs = 0
  for (let n = 1; n <= sessions; n++) {
    const ahead = stations.map(([ms, servers], i) => (ms / servers) * (queued[i] ?? 0))
    const coreWait = Math.min(1.5, ahead[0] ?? 0)
    const service = stations.map(([ms, , mark]) => ms + (typeof mark === 'number' ? mark * coreWait : 0))
    const before = stations.map(([, servers], i) => ((service[i] ?? 0) / servers) * (queued[i] ?? 0))
    const cycle = stations.map(([, , mark], i) => (before[i] ?? 0) + (mark === 'held' ? 0 : (service[i] ?? 0)))
    perMs = n / cycle.reduce((sum, value) => sum + value, 0)
    stations.forEach(([, servers, mark], i) => {
      const holding = mark === 'held' ? (service[i] ?? 0) : (service[i] ?? 0) / servers
      queued[i] = perMs * ((before[i] ?? 0) + holding)
    })
  }
  return perMs
}

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

  it('bounds the sessions running at once by the cores, and queues them at the cores and at the flush', () => {
    const cost = { bytesPerRow: 300, msPerRow: 0.005 }
    const ceiling = estimateIngestCeiling(cost, { storage, rowsPerCommit: 1_000, connections: 4, cores: 2 })
    // 5 ms of work a transaction; a 300 kB flush of 1.7 ms (0.2 + 300,000 bytes at 200 MB/s), one commit each.
    expect(ceiling.commitsPerFlush).toBe(1)
    expect(ceiling.flushMs).toBeCloseTo(1.7, 10)
    expect(ceiling.limits['server CPU']).toBeCloseTo((2 * 1_000 * 1000) / 5, 6)
    expect(ceiling.bindingLimit).toBe('server CPU')
    // Each of the 4 sessions works 5 ms at the cores, 2 at a time, and waits at the 1.7 ms flush,
    // which ends when its backend has a core again.
    expect(ceiling.maxRowsPerSec).toBeCloseTo(
      meanValueAnalysis(4, [
        [5, 2],
        [1.7, 1, 1],
      ]) *
        1_000 *
        1000,
      6,
    )
    expect(ceiling.maxRowsPerSec).toBeLessThan(400_000)
    const unbounded = estimateIngestCeiling(cost, { storage, rowsPerCommit: 1_000, connections: 4 })
    expect(unbounded.limits['server CPU']).toBeCloseTo(800_000, 6)
    expect(unbounded.assumptions.join(' ')).toContain('cores not given')
  })

  it('queues sessions for the rows a second the table takes from them together, below the cores', () => {
    const cost = { bytesPerRow: 300, msPerRow: 0.005 }
    const options = { storage, rowsPerCommit: 1_000, connections: 4, cores: 2 }
    const contended = estimateIngestCeiling(cost, { ...options, insertRowsPerSec: 250_000 })
    expect(contended.insertRowsPerSec).toBe(250_000)
    // 1,000 rows take 4 ms of the table's 250,000 rows/s, one transaction at a time, while working
    // its 5 ms at the cores: the table binds below the cores' 400,000 rows/s.
    expect(contended.limits['server CPU']).toBeCloseTo(250_000, 6)
    const byHand = meanValueAnalysis(4, [
      [5, 2],
      [4, 1, 'held'],
      [1.7, 1, 1],
    ])
    expect(contended.maxRowsPerSec).toBeCloseTo(byHand * 1_000 * 1000, 6)
    expect(contended.maxRowsPerSec).toBeLessThan(250_000)
    expect(contended.assumptions.join(' ')).toContain('reach 250,000 rows/s together at most')
    // One session waits for nobody there; without the figure the cores alone bound the sessions.
    const single = { ...options, connections: 1 }
    expect(estimateIngestCeiling(cost, { ...single, insertRowsPerSec: 250_000 }).maxRowsPerSec).toBeCloseTo(
      estimateIngestCeiling(cost, single).maxRowsPerSec,
      6,
    )
    expect(estimateIngestCeiling(cost, options).insertRowsPerSec).toBeNull()
  })

  it("leaves the sessions the cores a load generator on the server's machine does not use", () => {
    const cost = { bytesPerRow: 300, msPerRow: 0.005 }
    const options = { storage, rowsPerCommit: 1_000, cores: 2, clientMsPerRow: 0.001 }
    // 1 ms of the generator a transaction: rate = (2 - rate x 1 ms) / 5 ms, so a third of a transaction a ms.
    const shared = estimateIngestCeiling(cost, { ...options, connections: 4 })
    expect(shared.limits['server CPU']).toBeCloseTo(1_000_000 / 3, 3)
    // One session keeps a core of its own beside the generator's, and waits for its rows, then its flush.
    const single = estimateIngestCeiling(cost, { ...options, connections: 1 })
    expect(single.maxRowsPerSec).toBeCloseTo(1_000_000 / (1 + 5 + 1.7), 6)
  })

  it("counts a load generator's CPU a commit in its cycle, and against the cores only where it fills them with the server's", () => {
    const cost = { bytesPerRow: 300, msPerRow: 0.01 }
    const disk = { writeMBps: 200, iops: 1e9, fsyncMs: 0.5 }
    const options = { storage: disk, rowsPerCommit: 1, cores: 2, commitMs: 0.1, clientMsPerCommit: 0.4 }
    // One connection: 0.11 ms of server work, 0.4 of its client, then a 0.5015 ms flush.
    const single = estimateIngestCeiling(cost, options)
    expect(single.maxRowsPerSec).toBeCloseTo(1_000 / (0.11 + 0.4 + 0.5015), 6)
    // A backend would take 1 / 0.11 ms; the two processes fill two cores at 2 / 0.51 ms.
    expect(single.limits['server CPU']).toBeCloseTo(2_000 / 0.51, 6)
    expect(single.bindingLimit).toBe('commit flush latency')
    expect(single.clientMsPerCommit).toBe(0.4)
    // Without a load generator beside it, one backend's own work is its limit.
    const alone = estimateIngestCeiling(cost, { ...options, clientMsPerCommit: 0 })
    expect(alone.limits['server CPU']).toBeCloseTo(1_000 / 0.11, 6)
  })

  it('groups commits as measured, or as flushes one at a time allow', () => {
    const cost = { bytesPerRow: 300, msPerRow: 0.004 }
    const measured = estimateIngestCeiling(cost, { storage, connections: 4, commitsPerFlush: 1.9, commitMs: 0.1 })
    // One flush writes the WAL of the 1.9 commits it carries.
    expect(measured.flushMs).toBeCloseTo(0.2 + (1.9 * 300) / 200_000, 10)
    expect(measured.limits['commit flush latency']).toBeCloseTo((1.9 * 1000) / measured.flushMs, 6)
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
    expect(ceiling.maxRowsPerSec).toBeCloseTo((4 * 1000) / (0.2 + (4 * 300) / 200_000), 6)
    expect(ceiling.assumptions.join(' ')).toMatch(/server CPU: unknown/)
  })

  it('lets a backend woken from its flush wait for a core at most a scheduler slice: 0.75 ms x (1 + log2 cores, up to 8)', () => {
    expect([1, 2, 3, 4, 8, 64].map(wakeupWaitMaxMs)).toEqual([0.75, 1.5, 1.5, 2.25, 3, 3])
    // Four sessions of 20 ms at 2 cores would queue a flush's backend 10 ms or more behind them: a slice bounds it.
    const cost = { bytesPerRow: 300, msPerRow: 0.02 }
    const ceiling = estimateIngestCeiling(cost, { storage, rowsPerCommit: 1_000, connections: 4, cores: 2 })
    const byHand = meanValueAnalysis(4, [
      [20, 2],
      [1.7, 1, 1],
    ])
    expect(ceiling.maxRowsPerSec).toBeCloseTo(byHand * 1_000 * 1000, 6)
    expect(ceiling.assumptions.join(' ')).toContain('at most a scheduler slice later: 1.5 ms')
  })

  it('refuses a time a row that is not positive', () => {
    expect(() => estimateIngestCeiling({ bytesPerRow: 300, msPerRow: 0 })).toThrow(/msPerRow/)
  })
})
