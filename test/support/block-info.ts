import { expect } from 'vitest'
import type { WalObservation } from '../../src/index.js'

/**
 * pg_get_wal_block_info (16+) over a window, grouped by relation file and record type as walcost
 * counts a relation: a record's bytes without images go to its first block's file, each image to
 * its own block's. The independent reading an observation is compared against.
 */
export const BLOCK_INFO_BY_FILE = `
  with block as (
    select start_lsn, block_id, reldatabase, reltablespace, relfilenode, resource_manager || '/' || record_type as type,
           record_length, coalesce(block_fpi_length, 0) as fpi_length, block_fpi_info is not null as image
      from pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn, false)),
  record as (
    select distinct on (start_lsn) start_lsn, reldatabase, reltablespace, relfilenode, type,
           record_length - sum(fpi_length) over (partition by start_lsn) as own
      from block order by start_lsn, block_id),
  part as (
    select reldatabase, reltablespace, relfilenode, type, 1 as records, own as bytes, 0 as fpi_count from record
    union all
    select reldatabase, reltablespace, relfilenode, type, 0, fpi_length, 1 from block where image)
  select reldatabase::text as database, reltablespace::text as tablespace, relfilenode::text as relfilenode, type,
         sum(records)::text as records, sum(bytes)::text as bytes, sum(fpi_count)::text as fpi_count
    from part group by 1, 2, 3, 4`

interface Query {
  query<Row extends Record<string, unknown> = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<Row[]>
}

type Counts = { records: number; bytes: number; fpiCount: number }

/**
 * The observation agrees with pg_walinspect's reading of the same window: every relation's records,
 * bytes and images, and every record type's records, by relation and over the window.
 */
export async function expectAgreesWithWalinspect(test: Query, observation: WalObservation): Promise<void> {
  const { window } = observation
  const [distance] = await test.query<{ bytes: string }>('select ($2::pg_lsn - $1::pg_lsn)::text as bytes', [
    window.startLsn,
    window.endLsn,
  ])
  expect(window.bytes).toBe(Number(distance!.bytes))
  const relations = observation.relations!
  const unattributed = observation.unattributed!
  const total = (parts: Array<{ bytes: number }>) => parts.reduce((sum, part) => sum + part.bytes, 0)
  expect(total(relations) + total(unattributed)).toBe(window.bytes)

  const rows = await test.query<{
    database: string
    tablespace: string
    relfilenode: string
    type: string
    records: string
    bytes: string
    fpi_count: string
  }>(BLOCK_INFO_BY_FILE, [window.startLsn, window.endLsn])
  const byFile = new Map<string, Map<string, Counts>>()
  for (const row of rows) {
    const key = `${row.tablespace}/${row.database}/${row.relfilenode}`
    const types = byFile.get(key) ?? new Map<string, Counts>()
    byFile.set(key, types)
    types.set(row.type, { records: Number(row.records), bytes: Number(row.bytes), fpiCount: Number(row.fpi_count) })
  }
  const independent: Record<string, Record<string, Counts>> = {}
  const ours: Record<string, Record<string, Counts>> = {}
  for (const relation of relations) {
    const label = `${relation.databaseOid} ${relation.schema}.${relation.name} ${relation.files.map((file) => file.relfilenode).join(',')}`
    const theirs: Record<string, Counts> = {}
    for (const file of relation.files) {
      const key = `${file.tablespace}/${relation.databaseOid}/${file.relfilenode}`
      for (const [type, counts] of byFile.get(key) ?? []) {
        const sum = theirs[type] ?? { records: 0, bytes: 0, fpiCount: 0 }
        theirs[type] = {
          records: sum.records + counts.records,
          bytes: sum.bytes + counts.bytes,
          fpiCount: sum.fpiCount + counts.fpiCount,
        }
      }
      byFile.delete(key)
    }
    independent[label] = theirs
    ours[label] = Object.fromEntries(
      relation.recordTypes.map((type) => [
        type.type,
        { records: type.records, bytes: type.bytes, fpiCount: type.fpiCount },
      ]),
    )
    const sum = (counts: Counts[], pick: keyof Counts) => counts.reduce((total, entry) => total + entry[pick], 0)
    const theirBytes = sum(Object.values(theirs), 'bytes')
    expect(Math.abs(relation.bytes - theirBytes)).toBeLessThanOrEqual(0.005 * theirBytes)
    expect(relation.records).toBe(sum(Object.values(theirs), 'records'))
  }
  expect(ours).toEqual(independent)
  // pg_walinspect saw no file walcost did not list.
  expect([...byFile.keys()]).toEqual([])
  await expectRecordTypesAgree(test, observation)
}

/**
 * Over the window, every record type as pg_get_wal_stats (15+) counts it, and the page headers
 * from the positions alone: what a server without pg_get_wal_block_info can check.
 */
export async function expectRecordTypesAgree(test: Query, observation: WalObservation): Promise<void> {
  const { window } = observation
  const relations = observation.relations!
  const unattributed = observation.unattributed!
  const stats = await test.query<{ type: string; count: string; record_size: string; fpi_size: string }>(
    `select "resource_manager/record_type" as type, count::text, record_size::text, fpi_size::text
       from pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) where count > 0`,
    [window.startLsn, window.endLsn],
  )
  const byType: Record<string, { records: number; bytes: number }> = {}
  for (const part of [...relations, ...unattributed]) {
    for (const type of part.recordTypes) {
      const sum = byType[type.type] ?? { records: 0, bytes: 0 }
      byType[type.type] = { records: sum.records + type.records, bytes: sum.bytes + type.bytes }
    }
  }
  expect(byType).toEqual(
    Object.fromEntries(
      stats.map((row) => [
        row.type,
        { records: Number(row.count), bytes: Number(row.record_size) + Number(row.fpi_size) },
      ]),
    ),
  )
  expect(window.records).toBe(stats.reduce((sum, row) => sum + Number(row.count), 0))

  // The page headers, counted from the positions alone: every page that starts inside the window
  // (a segment's first page has the long header). A switch's padding would hold some of them.
  if (!byType['XLOG/SWITCH']) {
    const [layout] = await test.query<{ block: string; segment: string; start: string }>(
      `select current_setting('block_size') as block, pg_size_bytes(current_setting('wal_segment_size'))::text as segment,
              ($1::pg_lsn - '0/0'::pg_lsn)::text as start`,
      [window.startLsn],
    )
    const block = Number(layout!.block)
    const segment = Number(layout!.segment)
    const start = Number(layout!.start)
    let headers = 0
    for (let page = start - (start % block) + block; page < start + window.bytes; page += block)
      headers += page % segment === 0 ? 40 : 24
    expect(unattributed.find((part) => part.kind === 'page headers')?.bytes ?? 0).toBe(headers)
  }
}

/** The observed relation of that name. */
export const named = (observation: WalObservation, name: string) =>
  observation.relations!.find((relation) => relation.name === name)
