import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fieldNotesExperiment, type ScenarioComparison } from '../../src/index.js'
import { expectConsistent, heapInserts } from '../support/assertions.js'
import { backends, type TestDatabase } from '../support/backends.js'

// The field notes' experiment, at full size: 100,000 rows into a table of 500,000 with three B-tree
// indexes, checked against the record formats in shared/reference/wal-record-sizes.md.
describe.each(backends)('the field notes experiment on $name', (backend) => {
  let test: TestDatabase
  let comparison: ScenarioComparison
  let tupleLength: number
  beforeAll(async () => {
    test = await backend.open()
    comparison = await fieldNotesExperiment({ db: test.db, prefillRows: 500_000, batchRows: 100_000 })
    // The server's own t_len for such a row: pg_column_size of a whole-row value is the tuple's length.
    await test.exec(`create temporary table probe (time timestamptz, device_id int4, metric_id int4, value float8, extra int8);
                     insert into probe values (now(), 1, 1, 1, 1)`)
    const [row] = await test.query<{ len: number }>('select pg_column_size(p.*) as len from probe p')
    tupleLength = Number(row!.len)
  })
  afterAll(() => test.close())

  const scenario = (name: string) => comparison.scenarios[name]!

  it('runs the published three runs and one without each index, in one call', () => {
    expect(Object.keys(comparison.scenarios)).toEqual([
      'after-checkpoint',
      'steady',
      'no-indexes',
      'without:device_metrics_device_id_time_idx',
      'without:device_metrics_metric_id_time_idx',
      'without:device_metrics_time_idx',
    ])
  })

  it('starts every run from the same state: the A/A check repeats to the record on PGlite, within 1% on PostgreSQL', () => {
    expect(comparison.aa.scenario).toBe('after-checkpoint')
    if (backend.name === 'pglite') {
      expect(comparison.startingState).toBe('clone')
      // The same records and images; the bytes may differ by where the window starts, a WAL page header or two.
      expect([comparison.aa.records, comparison.aa.fpiCount]).toEqual([0, 0])
      expect(comparison.aa.bytesPerRow * 100_000).toBeLessThanOrEqual(2 * 24)
    } else {
      // The demo's sql is a function of (run, table): on a real server every run writes its own scratch copy.
      expect(comparison.startingState).toBe('scratch-copy')
      expect(comparison.sample).toEqual({ rows: 500_000, requested: 500_000 })
      expect(comparison.aa.share).toBeLessThan(0.01)
    }
  })

  it('writes one heap record of t_len + 31 bytes per row', () => {
    expect(tupleLength).toBe(56)
    for (const cost of Object.values(comparison.scenarios)) {
      expectConsistent(cost)
      expect(cost.rows).toBe(100_000)
      expect(cost.logicalBytes).toBe(32 * 100_000)
      expect(heapInserts(cost).records).toBe(100_000)
      // One record may carry an image instead of its tuple data; the others are t_len + 31 each.
      const perRecord = heapInserts(cost).bytes / heapInserts(cost).records
      expect(perRecord).toBeLessThanOrEqual(tupleLength + 31)
      expect(perRecord).toBeGreaterThan(tupleLength + 31 - 0.05)
    }
  })

  it('writes about four records a row and thousands of full-page images after a checkpoint', () => {
    const cost = scenario('after-checkpoint')
    expect(cost.scenario.checkpoint).toBe(true)
    expect(cost.walRecords! / cost.rows).toBeGreaterThan(3.9)
    expect(cost.walRecords! / cost.rows).toBeLessThan(4.2)
    expect(cost.fpiCount!).toBeGreaterThan(1_000)
    expect(cost.fpiCount!).toBeGreaterThan(5 * scenario('steady').fpiCount!)
    expect(cost.indexes).toHaveLength(3)
  })

  it('writes one record a row and no index bytes with the indexes dropped', () => {
    const cost = scenario('no-indexes')
    expect(heapInserts(cost).records).toBe(cost.rows)
    expect(cost.walRecords! / cost.rows).toBeLessThan(1.001)
    expect(cost.breakdown!.indexBytes).toBe(0)
    expect(cost.indexes).toEqual([])
    expect(cost.scenario.droppedIndexes).toHaveLength(3)
  })

  it('writes about one record and 72 bytes less a row without a two-column index', () => {
    const steady = scenario('steady')
    const without = scenario('without:device_metrics_metric_id_time_idx')
    expect(without.indexes.map((index) => index.name)).not.toContain('device_metrics_metric_id_time_idx')
    expect((steady.walRecords! - without.walRecords!) / steady.rows).toBeCloseTo(1, 1)
    // INSERT_LEAF is 48 + 24 bytes for (int4, timestamptz), plus its share of splits and alignment;
    // the field notes: "each extra index adds ~1 record and ~80 bytes per row". Images aside.
    const withoutImages = (cost: typeof steady) => (cost.walBytes - cost.breakdown!.fpiBytes) / cost.rows
    expect(withoutImages(steady) - withoutImages(without)).toBeGreaterThan(72)
    expect(withoutImages(steady) - withoutImages(without)).toBeLessThan(100)
  })

  it('finds index maintenance near the published ~70% and reports each index', () => {
    const { decomposition } = comparison
    expect(decomposition.method).toBe('wal')
    expect(decomposition.indexShareOfRecordBytes).toBeGreaterThan(0.65)
    expect(decomposition.indexShareOfRecordBytes).toBeLessThan(0.8)
    expect(decomposition.parts.filter((part) => part.part === 'index')).toHaveLength(3)
    const shares = decomposition.parts.reduce((sum, part) => sum + part.share!, 0)
    expect(shares).toBeCloseTo(1, 10)
    expect(decomposition.bytesPerRow).toBe(scenario('after-checkpoint').bytesPerRow)
    expect(decomposition.summary).toMatch(
      /^index maintenance is \d+% of WAL after a checkpoint and \d+% of record bytes; index device_metrics_\w+ alone is \d+% of WAL \(\d+ bytes a row in all\)\.$/,
    )
  })

  it('leaves almost nothing of the window to other activity on an idle server', () => {
    for (const cost of Object.values(comparison.scenarios))
      expect(cost.noiseBytes).toBeLessThan(0.01 * cost.windowBytes)
  })
})
