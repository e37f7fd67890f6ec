import { describe, expect, it } from 'vitest'
import type { ObservedRelation } from '../../src/index.js'
import { RelationSeries } from '../../src/traffic/relation-series.js'

const relation = (name: string | null, bytes: number, databaseOid = 5, relfilenode = 16_384): ObservedRelation => ({
  name,
  schema: name === null ? null : 'public',
  kind: name === null ? null : 'table',
  table: null,
  database: databaseOid === 0 ? null : `db${databaseOid}`,
  databaseOid,
  files: [{ tablespace: 1663, relfilenode, created: false, dropped: false }],
  records: 1,
  bytes,
  fpiCount: 0,
  fpiBytes: 0,
  recordTypes: [],
})

describe('RelationSeries', () => {
  it('names at most top relations a database, more bytes first, and keeps them; the rest add up in other', () => {
    const series = new RelationSeries(2)
    const first = series.increments([relation('a', 10), relation('b', 30), relation('c', 20)])
    expect(first.map((entry) => [entry.labels.relation, entry.bytes])).toEqual([
      ['b', 30],
      ['c', 20],
      ['other', 10],
    ])
    // a writes the most now, but b and c keep their series: a stays in other, as does a newcomer.
    const second = series.increments([relation('a', 100), relation('d', 5), relation('b', 1)])
    expect(second.map((entry) => [entry.labels.relation, entry.bytes])).toEqual([
      ['other', 105],
      ['b', 1],
    ])
    // Another database has a budget of its own; shared catalogs are pg_global.
    const third = series.increments([relation('a', 7, 6), relation('pg_database', 3, 0)])
    expect(third.map((entry) => [entry.labels.database, entry.labels.relation])).toEqual([
      ['db6', 'a'],
      ['pg_global', 'pg_database'],
    ])
  })

  it('labels a relation no catalog named by its relfilenode, as unnamed', () => {
    const [entry] = new RelationSeries(5).increments([relation(null, 8, 5, 99_999)])
    expect(entry?.labels).toEqual({ database: 'db5', schema: '', relation: '99999', kind: 'unnamed', table: '' })
  })
})
