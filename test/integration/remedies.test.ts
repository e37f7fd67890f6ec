import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fieldNotesSetup } from '../../src/compare/field-notes.js'
import { compareRemedies, measureInsertCost, type RemedyComparison } from '../../src/index.js'
import { heapInserts } from '../support/assertions.js'
import { backends, describeOnPostgres, type TestDatabase } from '../support/backends.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'

const TABLE = 'walcost_demo.device_metrics'
const INDEXES = ['device_metrics_device_id_time_idx', 'device_metrics_metric_id_time_idx', 'device_metrics_time_idx']

describe.each(backends)('compareRemedies on the field notes table on $name', (backend) => {
  let test: TestDatabase
  let result: RemedyComparison
  beforeAll(async () => {
    test = await backend.open()
    await test.exec(fieldNotesSetup(500_000))
    await test.exec(`vacuum analyze ${TABLE}`)
    result = await compareRemedies({
      db: test.db,
      table: TABLE,
      count: 40_000,
      batchSizes: [100],
      dropIndexes: INDEXES,
      targetRowsPerSec: 50_000,
    })
  })
  afterAll(() => test.close())
  const remedy = (name: string) => result.remedies.find((entry) => entry.name === name)!

  it('measures COPY at under 0.05 heap records a row', () => {
    const copy = remedy('COPY')
    expect(copy.measured).toBe(true)
    expect(heapInserts(copy.cost!).records / copy.cost!.rows).toBeLessThan(0.05)
    expect(copy.savingPct).toBeGreaterThan(0)
  })

  it('leaves one heap record of about 88 bytes a row without the three indexes', () => {
    const dropped = remedy(`drop ${INDEXES.join(', ')}`)
    expect(dropped.risk).toBe(2)
    expect(heapInserts(dropped.cost!).records).toBe(dropped.cost!.rows)
    expect(dropped.cost!.indexes).toEqual([])
    expect(dropped.bytesPerRow!).toBeGreaterThan(86)
    expect(dropped.bytesPerRow!).toBeLessThan(92)
  })

  it('cuts after-checkpoint image bytes with pglz and reports lz4 and zstd as unavailable on this build', () => {
    const pglz = remedy('wal_compression = pglz')
    expect(pglz.available).toBe(true)
    expect(pglz.cost!.scenario.settings).toEqual({ wal_compression: 'pglz' })
    const imageSize = (cost: typeof result.baseline) => cost.breakdown!.fpiBytes / cost.fpiCount!
    expect(imageSize(pglz.cost!)).toBeLessThan(0.7 * imageSize(result.baseline))
    expect(pglz.savingPct).toBeGreaterThan(5)
    expect(pglz.timeRatio).toBeGreaterThan(0)
    for (const method of ['lz4', 'zstd']) {
      const entry = remedy(`wal_compression = ${method}`)
      expect(entry.available).toBe(false)
      expect(entry.how).toContain(`cannot use ${method}`)
    }
  })

  it('starts every run from the same state, and says how exactly runs repeat', () => {
    expect(result.startingState).toBe(backend.name === 'pglite' ? 'clone' : 'scratch-copy')
    expect(result.aa.scenario).toBe('baseline')
    // What the runs cost the server: at least the baseline's WAL and its CHECKPOINT (nothing on PGlite's clones).
    if (backend.name === 'pglite') expect(result.serverCost).toBeNull()
    else {
      expect(result.serverCost!.walBytes).toBeGreaterThan(result.baseline.walBytes)
      expect(result.serverCost!.checkpointsRequested).toBeGreaterThanOrEqual(1)
    }
    // From clones the baseline repeats to the record and image (its bytes may differ by where the window
    // starts, a WAL page header or two); from scratch copies within 1% a row.
    if (backend.name === 'pglite') {
      expect([result.aa.records, result.aa.fpiCount]).toEqual([0, 0])
      expect(result.aa.bytesPerRow * result.baseline.rows).toBeLessThanOrEqual(2 * 24)
    } else {
      expect(result.sample).toEqual({ rows: 100_000, requested: 100_000 })
      expect(result.aa.share).toBeLessThan(0.01)
    }
    // Each remedy is its own measurement, from the same starting state as the baseline. One that writes
    // the very records of the baseline (rows per statement) may still differ by a WAL page header or two.
    const pageHeaders = (2 * 24) / result.baseline.rows
    for (const entry of result.remedies.filter((remedy) => remedy.measured)) {
      expect(entry.bytesPerRow).toBe(entry.cost!.bytesPerRow)
      expect(entry.bytesPerRow!).toBeLessThanOrEqual(result.baseline.bytesPerRow! + result.aa.bytesPerRow + pageHeaders)
      expect(entry.cost!.fpiCount!).toBeLessThanOrEqual(result.baseline.fpiCount!)
    }
    // COPY: one heap record a page, the same index records as the baseline.
    const copy = remedy('COPY').cost!
    expect(copy.indexes.map((index) => index.records)).toEqual(result.baseline.indexes.map((index) => index.records))
  })

  it('measures what each commit adds with real commits: a commit record and a WAL write that single-row ingest pays per row', () => {
    const sizes = result.commitSizes!
    // Transaction/COMMIT: a 24-byte header, a 2-byte data header and the 8-byte commit time, aligned to 40.
    expect(sizes.cost.walBytesPerCommit).toBeGreaterThanOrEqual(40)
    expect(sizes.cost.walBytesPerCommit).toBeLessThan(48)
    expect(sizes.cost.synchronousCommit).toBe('on')
    // With synchronous_commit on, every commit of a transaction that wrote WAL waits for a write of it.
    expect(sizes.cost.writesPerCommit).toBeGreaterThanOrEqual(0.9)
    expect(sizes.points.map((point) => point.rowsPerCommit)).toEqual([1, 10, 100, 1_000])
    for (const point of sizes.points) {
      expect(point.bytesPerRow).toBeCloseTo(
        result.baseline.bytesPerRow! + sizes.cost.walBytesPerCommit / point.rowsPerCommit,
        6,
      )
      expect(point.writesPerRow).toBeCloseTo(sizes.cost.writesPerCommit! / point.rowsPerCommit, 9)
    }
  })

  it("orders the remedies by saving, the unavailable last, with the field notes' risks", () => {
    const available = result.remedies.filter((entry) => entry.available)
    const savings = available.map((entry) => entry.savingPct!)
    expect(savings).toEqual([...savings].sort((a, b) => b - a))
    expect(result.remedies.slice(available.length).every((entry) => !entry.available)).toBe(true)
    const risks = Object.fromEntries(result.remedies.map((entry) => [entry.kind, entry.risk]))
    expect(risks).toEqual({ batching: 1, 'drop-indexes': 2, 'wal-compression': 3, 'checkpoint-spacing': 4 })
  })

  it('derives a monotone checkpoint-spacing curve from the after-checkpoint to the steady measurement', () => {
    const points = result.checkpointSpacing
    expect(points.map((point) => point.rowsBetweenCheckpoints)).toEqual(
      [...points.map((point) => point.rowsBetweenCheckpoints)].sort((a, b) => a - b),
    )
    for (let i = 1; i < points.length; i++)
      expect(points[i]!.bytesPerRow).toBeLessThanOrEqual(points[i - 1]!.bytesPerRow)
    const atBatch = points.find((point) => point.rowsBetweenCheckpoints === result.baseline.rows)!
    expect(atBatch.bytesPerRow).toBe(result.baseline.bytesPerRow)
    const last = points.at(-1)!
    expect(last.measured).toBe(false)
    expect(last.bytesPerRow - result.steady.bytesPerRow!).toBeLessThan(0.02 * result.steady.bytesPerRow!)
    const spacing = remedy('checkpoints 4x further apart')
    expect(spacing.measured).toBe(false)
    expect(spacing.how).toContain('derived from the after-checkpoint and steady measurements')
    expect(spacing.how).toContain('crash recovery')
  })

  it('carries the settings behind the numbers', () => {
    expect(result.baseline.configNotes.some((note) => note.startsWith('full_page_writes is on'))).toBe(true)
    expect(result.baseline.configNotes.some((note) => note.startsWith('checkpoint_timeout is'))).toBe(true)
  })
})

describeOnPostgres('configNotes on a server with non-default settings', () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startPostgres([
      '-c',
      'wal_level=logical',
      '-c',
      'wal_compression=pglz',
      '-c',
      'synchronous_commit=off',
      '-c',
      'shared_buffers=1MB',
    ])
  })
  afterAll(() => server.stop())

  it('says what each setting does to the measurement', async () => {
    const cost = await measureInsertCost({
      db: server.url,
      setup:
        "create table if not exists noted (id int8 primary key, body text); insert into noted select i, repeat('x', 200) from generate_series(1, 20000) i on conflict do nothing",
      table: 'noted',
      count: 1_000,
      checkpoint: true,
    })
    const notes = cost.configNotes.join('\n')
    expect(notes).toContain('wal_level is logical')
    expect(notes).toContain('wal_compression is pglz: full-page images were compressed')
    expect(notes).toContain('synchronous_commit is off')
    expect(notes).toMatch(/exceed shared_buffers \(1 MB\)/)
    expect(notes).toMatch(
      /Before this measurement the server had counted \d+ timed checkpoints? and \d+ requested ones?/,
    )
    expect(cost.server.walLevel).toBe('logical')
  })
})
