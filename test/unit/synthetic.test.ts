import { describe, expect, it } from 'vitest'
import type { Column, Table } from '../../src/measure/catalog.js'
import { syntheticOrigin, syntheticRows } from '../../src/measure/synthetic.js'
import { column } from './catalog.js'

const table = (columns: Column[], foreignKeys: Table['foreignKeys'] = []): Table => ({
  oid: '1',
  schema: 'public',
  name: 't',
  quoted: '"public"."t"',
  toastOid: null,
  owned: true,
  unlogged: false,
  temporary: false,
  options: [],
  fillfactor: 100,
  estimatedRows: 0,
  columns,
  attributes: columns.map((column) => ({ length: column.length, align: column.align, counted: true, virtual: false })),
  indexes: [],
  foreignKeys,
})

const start = { after: {}, epochMs: Date.UTC(2026, 0, 1), firstRow: 0, parentKeys: {}, sample: [] }

describe('syntheticRows', () => {
  it('references existing parent keys, all columns of a key from the same parent row', () => {
    const parentKeys = {
      t_fk: [
        ['1', 'eu'],
        ['2', 'us'],
        ['3', 'ap'],
      ],
    }
    const rows = [
      ...syntheticRows(
        table(
          [column('v', 'int4'), column('customer', 'int8'), column('region', 'text')],
          [{ name: 't_fk', columns: ['customer', 'region'], parent: '"public"."c"', parentColumns: ['id', 'region'] }],
        ),
        300,
        7,
        { ...start, parentKeys },
      ),
    ]
    const pairs = new Set(rows.map((row) => `${row[1]}/${row[2]}`))
    expect([...pairs].sort()).toEqual(['1/eu', '2/us', '3/ap'])
  })

  it('refuses a required foreign key whose parent has no rows, saying what to do', () => {
    const rows = () => [
      ...syntheticRows(
        table(
          [column('customer', 'int8')],
          [{ name: 't_fk', columns: ['customer'], parent: '"public"."c"', parentColumns: ['id'] }],
        ),
        1,
        1,
        start,
      ),
    ]
    expect(rows).toThrow(/its parent "public"."c" has no rows to reference. Fill the parent first/)
  })

  it('writes array values as array literals of their element type', () => {
    const [row] = [...syntheticRows(table([column('tags', '_text'), column('scores', '_int4')]), 1, 3, start)]
    expect(row?.[0]).toMatch(/^\{"[a-z0-9]+","[a-z0-9]+","[a-z0-9]+"\}$/)
    expect(row?.[1]).toMatch(/^\{"\d+","\d+","\d+"\}$/)
  })

  it('repeats the same rows for the same seed and start', () => {
    const shape = table([column('a', 'int4'), column('b', 'text')])
    expect([...syntheticRows(shape, 50, 9, start)]).toEqual([...syntheticRows(shape, 50, 9, start)])
  })

  it('takes whole sampled rows, NULLs and all, with new values in unique columns and in ascending times', () => {
    const shape = table([
      { ...column('id', 'int8'), unique: true },
      column('status', 'text'),
      column('note', 'text', false),
      { ...column('at', 'timestamptz'), correlation: 0.99 },
    ])
    const sample = [
      ['7', 'open', null, '2020-01-01 00:00:00+00'],
      ['8', 'closed', 'x'.repeat(5_000), '2020-01-02 00:00:00+00'],
    ]
    const rows = [...syntheticRows(shape, 200, 5, { ...start, after: { id: '100' }, sample })]
    expect(rows.map((row) => row[0])).toEqual(Array.from({ length: 200 }, (_, i) => String(101 + i)))
    const pairs = new Set(rows.map((row) => `${row[1]}/${row[2]?.length ?? 'null'}`))
    expect([...pairs].sort()).toEqual(['closed/5000', 'open/null'])
    expect(rows.every((row) => Date.parse(row[3] ?? '') >= start.epochMs)).toBe(true)
    expect(syntheticOrigin(shape, 5, { ...start, sample })).toEqual({
      seed: 5,
      keys: 'seeded',
      sampledRows: 2,
      fromSample: ['status', 'note'],
      generated: ['id', 'at'],
      fromParentKeys: [],
    })
  })
})
