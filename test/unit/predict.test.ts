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

  it('takes the keys of an index led by an identity or serial column as ascending, unless told otherwise', async () => {
    const columns = [
      { name: 'id', type: 'bigint', identity: true },
      { name: 'seq', type: 'bigserial' },
      { name: 'v', type: 'int4' },
    ]
    const prediction = await predictInsertCost({
      description: {
        columns,
        indexes: [
          { name: 'id_idx', columns: ['id'] },
          { name: 'seq_v_idx', columns: ['seq', 'v'] },
          { name: 'v_idx', columns: ['v'] },
          { name: 'id_random_idx', columns: ['id'], keyOrder: 'random' as const },
        ],
      },
    })
    expect(prediction.indexes.map((index) => [index.name, index.keyOrder])).toEqual([
      ['id_idx', 'ascending'],
      ['seq_v_idx', 'ascending'],
      ['v_idx', 'random'],
      ['id_random_idx', 'random'],
    ])
    expect(prediction.assumptions.filter((line) => line.includes('keys taken as'))).toEqual([
      'v_idx: keys taken as random, so its page splits are estimated',
      'id_random_idx: keys taken as random, so its page splits are estimated',
    ])
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

  it('takes a GIN, GiST, hash or BRIN index in a description, and asks a GIN index for its keys', async () => {
    const columns = [
      { name: 'id', type: 'bigint', identity: true },
      { name: 'doc', type: 'jsonb', avgWidth: 120 },
      { name: 'at', type: 'point' },
      { name: 'h', type: 'uuid' },
      { name: 'seen', type: 'timestamptz' },
    ]
    const gin = {
      name: 'doc_idx',
      method: 'gin' as const,
      columns: ['doc'],
      keys: [
        { perRow: 4, distinct: 4, keyBytes: 8 },
        { perRow: 1, distinct: 'each row' as const, keyBytes: 34 },
      ],
    }
    const prediction = await predictInsertCost({
      description: {
        columns,
        indexes: [
          gin,
          { name: 'at_idx', method: 'gist', columns: ['at'] },
          { name: 'h_idx', method: 'hash', columns: ['h'] },
          { name: 'seen_idx', method: 'brin', columns: ['seen'] },
        ],
      },
    })
    const byName = new Map(prediction.indexes.map((index) => [index.name, index]))
    // A point is stored in a GiST leaf as a 32-byte box: an 8-byte header and the box.
    expect(byName.get('at_idx')?.tupleSize).toBe(40)
    // Hash at its own default fillfactor, 75: 307 tuples of 20 bytes a bucket page before a split.
    expect(byName.get('h_idx')?.assumptions.join(' ')).toMatch(/hash, a bucket split every 307 rows/)
    expect(byName.get('seen_idx')?.bytesPerRow).toBe(0)
    // Five entries a row to its pending list, and the merge's share: more than the list's own records.
    expect(byName.get('doc_idx')?.recordsPerRow).toBeGreaterThan(1)
    expect(prediction.assumptions.join(' ')).toMatch(
      /doc_idx: GIN from its keys as described, for a table of 1,000,000 rows/,
    )
    const { keys: _, ...withoutKeys } = gin
    await expect(predictInsertCost({ description: { columns, indexes: [withoutKeys] } })).rejects.toMatchObject({
      code: 'INVALID_OPTIONS',
      message: expect.stringMatching(/doc_idx is a GIN index: give its keys/),
    })
    await expect(
      predictInsertCost({
        description: { columns, indexes: [{ ...gin, keys: [{ perRow: 3, distinct: 2 }] }] },
      }),
    ).rejects.toMatchObject({ code: 'INVALID_OPTIONS', message: expect.stringMatching(/a row holds a key once/) })
  })
})
