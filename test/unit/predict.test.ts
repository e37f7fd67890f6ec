import { describe, expect, it } from 'vitest'
import { predictInsertCost } from '../../src/index.js'

// A planned table's prediction from its description alone: the record formats, no server.
describe('predictInsertCost from a description', () => {
  const description = {
    name: 'device_metrics',
    columns: [
      { name: 'time', type: 'timestamptz' },
      { name: 'device_id', type: 'int4' },
      { name: 'metric_id', type: 'integer' },
      { name: 'value', type: 'double precision' },
      { name: 'extra', type: 'bigint' },
    ],
    indexes: [
      { name: 'time_idx', columns: ['time'], keyOrder: 'ascending' as const },
      { name: 'device_time_idx', columns: ['device_id', 'time'], keyOrder: 'interleaved' as const },
      { name: 'metric_time_idx', columns: ['metric_id', 'time'], keyOrder: 'grouped-ascending' as const },
    ],
  }

  it("gives the record formats' floor for the field notes table: 87 + 64 + 72 + 72 bytes before splits", async () => {
    const prediction = await predictInsertCost({ description })
    expect(prediction.heap.bytesPerRow).toBe(87)
    expect(prediction.indexes.map((index) => 48 + index.tupleSize)).toEqual([64, 72, 72])
    expect(prediction.bytesPerRow).toBeGreaterThan(295)
    expect(prediction.bytesPerRow).toBeLessThan(330)
    expect(prediction.breakdown.fpiBytes).toBe(0)
  })

  it('counts commit records per transaction, larger with wal_level=logical', async () => {
    const single = await predictInsertCost({ description, rowsPerCommit: 1 })
    const logical = await predictInsertCost({ description: { ...description, walLevel: 'logical' }, rowsPerCommit: 1 })
    const batched = await predictInsertCost({ description, rowsPerCommit: 1000 })
    expect(single.bytesPerRow - batched.bytesPerRow).toBeCloseTo(((40 - 40 / 1000) * 8192) / 8168, 6)
    expect(logical.bytesPerRow - single.bytesPerRow).toBeCloseTo((8 * 8192) / 8168, 6)
  })

  it('predicts COPY as far fewer heap records, each packing a page', async () => {
    const copy = await predictInsertCost({ description, method: 'copy' })
    expect(copy.heap.recordsPerRow).toBeLessThan(0.02)
    expect(copy.heap.bytesPerRow).toBeLessThan(50)
  })

  it('refuses an unknown type and a table with a description', async () => {
    await expect(
      predictInsertCost({ description: { columns: [{ name: 'x', type: 'hyperloglog' }] } }),
    ).rejects.toMatchObject({ code: 'INVALID_OPTIONS' })
    await expect(predictInsertCost({ table: 't', description })).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      field: 'table',
    })
  })
})
