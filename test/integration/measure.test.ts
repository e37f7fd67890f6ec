import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { measureInsertCost } from '../../src/index.js'
import { formatInsertCost } from '../../src/report/index.js'
import { expectConsistent, heapInserts } from '../support/assertions.js'
import { backends, type TestDatabase } from '../support/backends.js'

async function withClient(url: string, work: (client: pg.Client) => Promise<void>) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await work(client)
  } finally {
    await client.end()
  }
}

const ITEMS = `
  create table items (
    id int8 primary key,
    name text not null,
    price numeric(10, 2),
    tags text[],
    created timestamptz not null default now()) with (autovacuum_enabled = false);
  create index items_name_idx on items (name);`

function itemRows(count: number, offset = 0) {
  return Array.from({ length: count }, (_, i) => ({
    id: offset + i + 1,
    name: `item ${offset + i} ${'x'.repeat(i % 20)}`,
    price: (i % 1000) / 10,
    tags: i % 3 === 0 ? null : ['a', `t${i % 7}`],
  }))
}

describe.each(backends)('measureInsertCost on $name', (backend) => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await backend.open()
    await test.exec(ITEMS)
    await test.exec(
      `create table fixed (a int8 not null, b int4 not null, c float8 not null, d bool not null, e timestamptz not null)`,
    )
  })
  afterAll(() => test.close())

  it.each(['insert', 'multirow', 'copy'] as const)('streams rows with method %s and keeps nothing', async (method) => {
    const before = await test.query<{ n: string }>('select count(*)::text as n from items')
    const cost = await measureInsertCost({ db: test.db, table: 'items', rows: itemRows(2_000), method, batchSize: 250 })
    expectConsistent(cost)
    expect(cost.rows).toBe(2_000)
    expect(cost.scenario).toMatchObject({ batch: 'rows', method, table: '"public"."items"' })
    if (method === 'copy') expect(heapInserts(cost).records).toBeLessThan(0.05 * cost.rows)
    else expect(heapInserts(cost).records).toBe(cost.rows)
    // Two B-tree indexes: one leaf insert each per row, plus splits.
    expect(cost.indexes.map((index) => index.name)).toEqual(['items_name_idx', 'items_pkey'])
    for (const index of cost.indexes) expect(index.records).toBeGreaterThanOrEqual(cost.rows)
    expect(await test.query('select count(*)::text as n from items')).toEqual(before)
  })

  it.each([
    ['unlogged', 'create unlogged table if not exists unlogged_items', 'an UNLOGGED table'],
    ['temporary', 'create temporary table if not exists temp_items', 'a temporary table'],
  ])('says why a %s table measures next to nothing, in the result and its text', async (kind, create, what) => {
    const table = `${kind === 'unlogged' ? 'unlogged' : 'temp'}_items`
    try {
      const cost = await measureInsertCost({
        db: test.db,
        setup: `${create} (id int8 primary key, v text)`,
        table,
        count: 1_000,
      })
      expect(cost.bytesPerRow).toBeLessThan(1)
      const note = cost.notes.find((entry) => entry.includes(`is ${what}: its rows and indexes write no WAL`))
      expect(note).toBeDefined()
      expect(formatInsertCost(cost)).toContain(note)
    } finally {
      await test.exec(`drop table if exists ${table}`)
    }
  })

  it('reads the same logical bytes whichever method sends the rows', async () => {
    const results = []
    for (const method of ['insert', 'multirow', 'copy'] as const) {
      results.push((await measureInsertCost({ db: test.db, table: 'items', rows: itemRows(500), method })).logicalBytes)
    }
    expect(new Set(results).size).toBe(1)
    expect(results[0]).toBeGreaterThan(500 * (8 + 6))
  })

  it('counts logical bytes as column data only', async () => {
    const rows = Array.from({ length: 1_000 }, (_, i) => ({
      a: i,
      b: i,
      c: i / 3,
      d: i % 2 === 0,
      e: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
    }))
    const cost = await measureInsertCost({ db: test.db, table: 'fixed', rows, method: 'copy' })
    expect(cost.logicalBytes).toBe(1_000 * (8 + 4 + 8 + 1 + 8))
    expect(cost.logicalBytesSource).toBe('wal')
    expect(cost.indexes).toEqual([])
  })

  it('accepts an async iterable of rows', async () => {
    async function* generate() {
      for (const row of itemRows(300)) yield row
    }
    const cost = await measureInsertCost({ db: test.db, table: 'items', rows: generate(), method: 'multirow' })
    expect(cost.rows).toBe(300)
  })

  it.each(['insert', 'multirow', 'copy'] as const)(
    'generates count rows past the unique keys with method %s',
    async (method) => {
      await test.exec(
        `insert into items (id, name) select i, 'existing ' || i from generate_series(1, 100) i on conflict do nothing`,
      )
      const cost = await measureInsertCost({ db: test.db, table: 'items', count: 1_500, method })
      expectConsistent(cost)
      expect(cost.rows).toBe(1_500)
      expect(cost.scenario.batch).toBe('count')
    },
  )

  it('measures an sql batch and finds its rows in the pages it added', async () => {
    await test.exec(`create table appended (id int8 not null, note text not null);
                     insert into appended select i, 'prefill' from generate_series(1, 5000) i`)
    const cost = await measureInsertCost({
      db: test.db,
      table: 'appended',
      sql: `insert into appended select 1000000 + i, 'sql ' || i from generate_series(1, 3000) i`,
    })
    expectConsistent(cost)
    expect(cost.rows).toBe(3_000)
    expect(cost.logicalBytesSource).toBe('wal')
    // As stored: int8 8 bytes, a short text its length plus a 1-byte header.
    const [expected] = await test.query<{ bytes: string }>(
      `select sum(8 + 1 + octet_length('sql ' || i))::text as bytes from generate_series(1, 3000) i`,
    )
    expect(cost.logicalBytes).toBe(Number(expected!.bytes))
    expect(heapInserts(cost).records).toBe(3_000)
  })

  it('finds rows the free space map put into older pages', async () => {
    await test.exec(`create table reused (id int8 not null, note text not null);
                     insert into reused select i, 'prefill' from generate_series(1, 20000) i;
                     delete from reused where id % 2 = 0`)
    await test.exec('vacuum reused')
    const options = { table: 'reused', sql: `insert into reused select i, 'again' from generate_series(1, 2000) i` }
    const cost = await measureInsertCost({ db: test.db, ...options })
    expect(cost.rows).toBe(2_000)
    expect(cost.logicalBytesSource).toBe('wal')
    expect(cost.logicalBytes).toBe(2_000 * (8 + 6))
    if (backend.name !== 'postgres') return
    // A caller's Client has no second session to read the WAL during the batch: the rows are scanned.
    await withClient(test.url!, async (client) => {
      const scanned = await measureInsertCost({ db: client, ...options })
      expect(scanned.logicalBytesSource).toBe('table-scan')
      expect(scanned.logicalBytes).toBe(cost.logicalBytes)
    })
  })

  it.each([
    [false, 'off'],
    [true, 'off'],
    [true, 'pglz'],
  ])(
    'reads the logical bytes from the insert records as pg_column_size counts them (checkpoint first: %s, wal_compression %s)',
    async (checkpoint, compression) => {
      await test.exec(`create table if not exists stored (id int8 not null, gone int4, small int2, amount numeric, label text,
          code char(5), flag bool, tag name, at timestamptz, key uuid, doc jsonb, nums int4[], blob bytea, squeezed text, outside text)
          with (autovacuum_enabled = false);
        alter table stored drop column if exists gone;
        insert into stored (id, label) select i, 'prefill' from generate_series(1, 100) i`)
      // Every kind of value: fixed and variable width, NULLs, compressed inline, TOASTed, after a dropped column.
      const sql = `insert into stored select i, (i % 100)::int2, case when i % 7 = 0 then null else i * 1.5 end, 'label ' || i,
          'c' || (i % 10), i % 2 = 0, 'n' || i, timestamptz '2026-01-01' + i * interval '1 s', md5(i::text)::uuid,
          jsonb_build_object('i', i), array[i, i + 1], case when i % 5 <> 0 then decode(md5(i::text), 'hex') end,
          case when i % 50 = 0 then repeat('squeeze ', 1000) end,
          case when i % 97 = 0 then (select string_agg(md5((i * 1000 + g)::text), '') from generate_series(1, 200) g) end
        from generate_series(1000, 3999) i`
      const cost = await measureInsertCost({
        db: test.db,
        table: 'stored',
        sql,
        checkpoint,
        setup: `set wal_compression = ${compression}`,
      }).finally(() => test.exec('reset wal_compression'))
      expectConsistent(cost)
      if (checkpoint) expect(cost.heap!.fpiCount).toBeGreaterThan(0)
      await test.exec('begin')
      await test.exec(sql)
      const [expected] = await test.query<{ bytes: string }>(
        `select sum(${[
          'id',
          'small',
          'amount',
          'label',
          'code',
          'flag',
          'tag',
          'at',
          'key',
          'doc',
          'nums',
          'blob',
          'squeezed',
          'outside',
        ]
          .map((column) => `coalesce(pg_column_size(${column}), 0)`)
          .join(' + ')})::text as bytes from stored where id >= 1000`,
      )
      await test.exec('rollback')
      // A compressed image is not decoded: the rows are scanned instead, to the same sum.
      if (compression === 'off') expect(cost.logicalBytesSource).toBe('wal')
      expect(cost.rows).toBe(3_000)
      expect(cost.logicalBytes).toBe(Number(expected!.bytes))
    },
  )

  it.each([
    ['insert', false],
    ['insert', true],
    ['copy', true],
  ] as const)(
    "reads a fixed-width table's rows from its insert records, padding not counted (%s, checkpoint first: %s)",
    async (method, checkpoint) => {
      await test.exec(`create table if not exists fixed_width (id int8 not null, at timestamptz not null,
          device int4 not null, v float8 not null, ok bool not null) with (autovacuum_enabled = false);
        insert into fixed_width select i, now(), i % 10, i, true from generate_series(1, 100) i`)
      const batch =
        method === 'copy'
          ? { method, count: 3_000 }
          : {
              sql: `insert into fixed_width select i, timestamptz '2026-01-01' + i * interval '1 s', i % 10, i * 0.5, i % 2 = 0
                      from generate_series(1000, 3999) i`,
            }
      const cost = await measureInsertCost({ db: test.db, table: 'fixed_width', checkpoint, ...batch })
      expect(cost.logicalBytesSource).toBe('wal')
      expect(cost.rows).toBe(3_000)
      expect(cost.logicalBytes).toBe(3_000 * (8 + 8 + 4 + 8 + 1))
      if (checkpoint) expect(cost.heap!.fpiCount).toBeGreaterThan(0)
      // The embedded flush turns wal_init_zero off for the measuring transaction only.
      expect(await test.query(`select current_setting('wal_init_zero') as zero`)).toEqual([{ zero: 'on' }])
    },
  )

  it.runIf(backend.name === 'postgres')(
    'with track_activities off, the second session cannot see how far the batch is and reads it all afterwards',
    async () => {
      const options = {
        table: 'appended',
        sql: `insert into appended select 2000000 + i, 'sql ' || i from generate_series(1, 3000) i`,
      }
      const tracked = await measureInsertCost({ db: test.db, ...options })
      const untracked = await measureInsertCost({ db: test.db, ...options, setup: 'set track_activities = off' })
      expectConsistent(untracked)
      expect(untracked.logicalBytesSource).toBe('wal')
      expect(untracked.rows).toBe(3_000)
      expect(untracked.logicalBytes).toBe(tracked.logicalBytes)
      // The second run inserts its keys beside the first run's dead index entries: a page split more
      // or less (a few records) is the table's, not the reading's, which would miss whole pages.
      expect(Math.abs((untracked.walRecords ?? 0) - (tracked.walRecords ?? 0))).toBeLessThanOrEqual(
        0.005 * (tracked.walRecords ?? 0),
      )
    },
  )

  it.runIf(backend.name === 'postgres')(
    "reads a COPY's logical bytes from its multi-insert records as a scan of its rows counts them",
    async () => {
      await withClient(test.url!, async (client) => {
        for (const checkpoint of [false, true]) {
          const options = { table: 'items', rows: itemRows(3_000, 50_000), method: 'copy', checkpoint } as const
          const fromWal = await measureInsertCost({ db: test.db, ...options })
          const scanned = await measureInsertCost({ db: client, ...options, rows: itemRows(3_000, 50_000) })
          expect(fromWal.logicalBytesSource).toBe('wal')
          expect(scanned.logicalBytesSource).not.toBe('wal')
          expect(fromWal.rows).toBe(3_000)
          expect(fromWal.logicalBytes).toBe(scanned.logicalBytes)
          if (checkpoint) expect(fromWal.heap!.fpiCount).toBeGreaterThan(0)
        }
      })
    },
  )

  it('drops only the named indexes and restores them', async () => {
    const cost = await measureInsertCost({ db: test.db, table: 'items', count: 1_000, dropIndexes: ['items_name_idx'] })
    expect(cost.scenario.droppedIndexes).toEqual(['items_name_idx'])
    expect(cost.indexes.map((index) => index.name)).toEqual(['items_pkey'])
    const indexes = await test.query<{ name: string }>(
      `select indexname as name from pg_indexes where tablename = 'items' order by 1`,
    )
    expect(indexes.map((row) => row.name)).toEqual(['items_name_idx', 'items_pkey'])
  })

  // Every run here is rolled back and leaves dead tuples; an autovacuum that cleans them between the
  // CHECKPOINT and the batch changes every page first (its records are noise, not ours), and the
  // batch then logs no image. items is created with autovacuum off so that nothing else touches it.
  it('logs a full-page image for the first change to each page after a checkpoint', async () => {
    const cold = await measureInsertCost({ db: test.db, table: 'items', count: 2_000, checkpoint: true })
    const warm = await measureInsertCost({ db: test.db, table: 'items', count: 2_000 })
    expectConsistent(cold)
    expect(cold.scenario.checkpoint).toBe(true)
    expect(cold.skipped).toEqual([])
    expect(cold.fpiCount!).toBeGreaterThan(warm.fpiCount!)
    expect(cold.breakdown!.fpiBytes).toBeGreaterThan(warm.breakdown!.fpiBytes)
  })
})
