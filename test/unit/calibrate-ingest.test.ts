import { describe, expect, it } from 'vitest'
import { fitIngestRuns, type MeasuredRun } from '../../src/model/calibrate-ingest.js'

/**
 * Runs of a server that behaves as the model says: a flush syncs in 0.3 ms and writes 200 MB/s, a
 * connection spends 0.01 ms a row (0.002 of it this process making the row) and 0.4 ms a commit
 * (0.3 of it this process starting and ending the COPY).
 */
function run(rowsPerCommit: number, connections: number, rowsPerSec: number): MeasuredRun {
  const bytesPerRow = 300
  const flushMs = 0.3 + (rowsPerCommit * bytesPerRow) / 200_000
  return {
    rowsPerCommit,
    connections,
    seconds: 2,
    rows: rowsPerSec * 2,
    commits: (rowsPerSec * 2) / rowsPerCommit,
    flushes: (rowsPerSec * 2) / rowsPerCommit,
    rowsPerSec,
    bytesPerRow,
    flushMs,
    commitsPerFlush: 1,
    transactionMs: flushMs + rowsPerCommit * 0.01 + 0.4,
    clientCpuMs: 0.3 + rowsPerCommit * 0.002,
  }
}

const parallelism = { connections: 4, singleRowsPerSec: 100_000, parallelRowsPerSec: 150_000, speedup: 1.5 }

describe('fitIngestRuns', () => {
  it("recovers the flush, the time a row and a commit, and the client's share from single-connection runs", () => {
    const runs = [run(1, 1, 1_400), run(100, 1, 55_000), run(1_000, 1, 85_000), run(1_000, 4, 120_000)]
    const fitted = fitIngestRuns(runs, parallelism, 'nvme', 2, 'the table')
    expect(fitted.storage.fsyncMs).toBeCloseTo(0.3, 9)
    expect(fitted.storage.writeMBps).toBeCloseTo(200, 6)
    // The server's time a row: the connection's less the rows this process made.
    expect(fitted.msPerRow).toBeCloseTo(0.008, 9)
    expect(fitted.clientMsPerRow).toBeCloseTo(0.002, 9)
    expect(fitted.clientMsPerCommit).toBeCloseTo(0.3, 9)
    expect(fitted.commitMs).toBeCloseTo(0.1, 9)
    // A single connection's estimate is its cycle: the rows, the commit, then the flush.
    const single = fitted.runs.find((entry) => entry.rowsPerCommit === 1_000 && entry.connections === 1)
    expect(single?.estimatedRowsPerSec).toBeCloseTo((1_000 * 1_000) / (1_000 * 0.01 + 0.4 + 0.3 + 1.5), 3)
    expect(single?.ratio).toBeCloseTo((single?.estimatedRowsPerSec ?? 0) / 85_000, 9)
    expect(single?.bindingLimit).toBe('server CPU')
    // One row a commit: this process's 0.3 ms a commit is its own, beside the server's 0.11 ms.
    expect(fitted.runs.find((entry) => entry.rowsPerCommit === 1)?.bindingLimit).toBe('commit flush latency')
    // Four sessions are held to the rows a second they reach together.
    const four = fitted.runs.find((entry) => entry.connections === 4)
    expect(four?.estimatedRowsPerSec).toBeLessThan(150_000)
  })
})
