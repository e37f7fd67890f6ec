import { describe, expect, it } from 'vitest'
import { buildScratchCopy } from '../../src/compare/scratch.js'
import { rolledBack } from '../../src/driver/rolled-back.js'
import type { Session } from '../../src/driver/types.js'
import { measureInsertCost } from '../../src/index.js'
import { prepareBatch } from '../../src/measure/batch.js'
import { resolveTable } from '../../src/measure/catalog.js'
import { backends, openTestSession, type TestDatabase } from '../support/backends.js'

const SETUP = `create table customers (id int8 primary key, region text not null, unique (id, region));
  insert into customers select i, 'r' || (i % 5) from generate_series(1, 1000) i;
  create table orders (id int8 generated always as identity primary key,
    customer_id int8 not null references customers (id), cid int8, region text,
    tags text[] not null, scores int4[], foreign key (cid, region) references customers (id, region));
  create index on orders (customer_id);`

describe.each(backends)('count rows on $name', (backend) => {
  /** A fresh database and a walcost session on it, for tests that drive the modules directly. */
  const withSession = async (work: (test: TestDatabase, session: Session) => Promise<void>) => {
    const test = await backend.open()
    const session = await openTestSession(test.db)
    try {
      await work(test, session)
    } finally {
      await session.close()
      await test.close()
    }
  }

  it("fill foreign keys from the parent's keys and arrays from their element type, and the parent's locks are measured", async () => {
    const test = await backend.open()
    try {
      await test.exec(SETUP)
      const cost = await measureInsertCost({ db: test.db, table: 'orders', count: 2_000 })
      expect(cost.rows).toBe(2_000)
      // Each referenced parent row is locked FOR KEY SHARE once per transaction: a Heap/LOCK record.
      const parent = cost.otherRelations.find((relation) => relation.name === 'customers')
      const locks = parent?.recordTypes.find((type) => type.type === 'Heap/LOCK')?.records ?? 0
      expect(locks).toBeGreaterThan(500)
      expect(locks).toBeLessThanOrEqual(1_000)
    } finally {
      await test.close()
    }
  })

  it('draw fresh unique keys on every call unless a seed is given, and the same values either way', () =>
    withSession(async (test, session) => {
      await test.exec(`create table accounts (id uuid primary key, email text unique not null, plan text not null);
          insert into accounts select md5(i::text)::uuid, 'user' || i || '@example.com', 'p' || i % 3 from generate_series(1, 500) i;
          analyze accounts`)
      const table = await resolveTable(session, 'accounts')
      const batchOf = async (seed?: number) => {
        const options = { count: 50, seed, method: 'insert', batchSize: 1_000 } as const
        const batch = await prepareBatch(session, table, options)
        const rows: Array<Array<string | null>> = []
        for await (const row of batch.values()) rows.push(row as Array<string | null>)
        return { rows, synthetic: batch.synthetic }
      }
      const [first, second] = [await batchOf(), await batchOf()]
      const keys = (rows: Array<Array<string | null>>, column: number) => rows.map((row) => row[column])
      expect(first.synthetic?.keys).toBe('fresh')
      for (const column of [0, 1]) {
        expect(new Set([...keys(first.rows, column), ...keys(second.rows, column)]).size).toBe(100)
        // As wide on every call: measurements repeat although the keys differ.
        expect(keys(first.rows, column).map((key) => key?.length)).toEqual(
          keys(second.rows, column).map((key) => key?.length),
        )
      }
      expect(keys(first.rows, 2)).toEqual(keys(second.rows, 2))
      const [seeded, again] = [await batchOf(7), await batchOf(7)]
      expect(seeded.synthetic?.keys).toBe('seeded')
      expect(seeded.rows).toEqual(again.rows)
    }))

  it('give the same rows for the same seed and contents, whatever the statistics say: before ANALYZE, after it, after a new index', () =>
    withSession(async (test, session) => {
      // Wide enough rows that the sample reads a share of the pages, not all of them.
      await test.exec(`create table events (id int8 primary key, code text unique not null, kind text not null,
            note text, amount int4, at timestamptz not null);
          alter table events set (autovacuum_enabled = false);
          insert into events select i, 'code-' || i, 'k' || i % 7, case when i % 3 = 0 then repeat('n', 20 + i % 50) end,
                                    i % 1000, timestamptz '2026-01-01' + i * interval '1 second'
            from generate_series(1, 30000) i`)
      const batchOf = async () => {
        const table = await resolveTable(session, 'events')
        const batch = await prepareBatch(session, table, { count: 300, seed: 11, method: 'insert', batchSize: 1_000 })
        const rows: Array<Array<string | null>> = []
        for await (const row of batch.values()) rows.push(row as Array<string | null>)
        const [stats] = await test.query<{ reltuples: number; correlation: number | null }>(
          `select reltuples::float8 as reltuples, (select correlation::float8 from pg_stats where tablename = 'events' and attname = 'at') as correlation
               from pg_class where oid = 'events'::regclass`,
        )
        return { rows, synthetic: batch.synthetic, stats }
      }
      const fresh = await batchOf()
      await test.exec('analyze events')
      const analysed = await batchOf()
      await test.exec('create index events_amount on events (amount)')
      const indexed = await batchOf()
      // The statistics did change under the same rows: none before ANALYZE, then the table's.
      expect(fresh.stats).toEqual({ reltuples: -1, correlation: null })
      expect(analysed.stats?.reltuples).toBe(30_000)
      expect(analysed.stats?.correlation).toBeGreaterThan(0.99)
      expect(fresh.synthetic?.sampledRows).toBe(1_000)
      // The ascending time column continues past the newest row, the others come from the sample.
      expect(fresh.synthetic?.generated).toEqual(['id', 'code', 'at'])
      expect(fresh.rows[0]?.[5]).toBe('2026-01-01T08:20:00.001Z')
      for (const later of [analysed, indexed]) {
        expect(later.synthetic).toEqual(fresh.synthetic)
        expect(later.rows).toEqual(fresh.rows)
      }
    }))

  it('copy the newest sampleRows rows into a scratch copy even when the statistics count rows that are gone', () =>
    withSession(async (test, session) => {
      await test.exec(`create table readings (id int8 primary key, value float8 not null, label text);
          alter table readings set (autovacuum_enabled = false);
          insert into readings select i, i / 3.0, 'r' || i from generate_series(1, 40000) i;
          analyze readings;
          delete from readings where id % 4 <> 0`)
      const table = await resolveTable(session, 'readings')
      const copied = await rolledBack(session, 'transaction', async () => {
        const copy = await buildScratchCopy(session, table, 2_000)
        const [newest] = await session.query<{ low: string; high: string }>(
          `select min(id)::text as low, max(id)::text as high from ${copy.quoted}`,
        )
        return { rows: copy.rows, ...newest }
      })
      // pg_class still counts the deleted rows: three in four of the rows a page it promises are gone.
      expect(copied).toEqual({ rows: 2_000, low: String(40_000 - 4 * 1_999), high: '40000' })
    }))

  it.each(['insert', 'multirow', 'copy'] as const)('insert bytea values with method %s', async (method) => {
    const test = await backend.open()
    try {
      await test.exec('create table blobs (id int8 primary key, raw bytea not null)')
      const cost = await measureInsertCost({ db: test.db, table: 'blobs', count: 100, method })
      expect(cost.rows).toBe(100)
      expect(cost.logicalBytes).toBeGreaterThan(100 * 8)
    } finally {
      await test.close()
    }
  })

  it("write within 10% of the table's own rows: mostly NULL columns, TOASTed text, arrays, a partial index, a foreign key", async () => {
    const test = await backend.open()
    try {
      const sparse = Array.from({ length: 30 }, (_, i) => `c${i} ${i % 2 ? 'int4' : 'text'}`).join(', ')
      const sparseValues = Array.from(
        { length: 30 },
        (_, i) => `case when (i * ${i + 7}) % 20 = 0 then ${i % 2 ? 'i' : "'v' || i"} end`,
      ).join(', ')
      await test.exec(`create table parents (id int8 primary key);
        insert into parents select generate_series(1, 500);
        create table wide (id bigserial primary key, parent_id int8 not null references parents (id),
          status text not null, tags text[], body text, ${sparse}, created_at timestamptz not null);
        create index wide_parent on wide (parent_id);
        create index wide_open on wide (created_at) where status = 'open';
        create index wide_tags on wide using gin (tags);
        insert into wide (parent_id, status, tags, body, ${Array.from({ length: 30 }, (_, i) => `c${i}`).join(', ')}, created_at)
          select i % 500 + 1, case when i % 10 = 0 then 'open' else 'closed' end,
                 array['t' || i % 41, 'u' || i % 13, 'w' || i % 7],
                 case when i % 20 = 0 then (select string_agg(md5((i * 1000 + g)::text), '') from generate_series(1, 100 + i % 500) g) end,
                 ${sparseValues}, timestamptz '2026-01-01' + i * interval '1 second'
            from generate_series(1, 20000) i;
        alter table wide set (autovacuum_enabled = false)`)
      await test.exec('vacuum analyze wide')
      const columns = `parent_id, status, tags, body, ${Array.from({ length: 30 }, (_, i) => `c${i}`).join(', ')}, created_at`
      const own = await measureInsertCost({
        db: test.db,
        table: 'wide',
        sql: `insert into wide (${columns}) select ${columns} from wide tablesample system (25) repeatable (7) limit 2000`,
      })
      const made = await measureInsertCost({ db: test.db, table: 'wide', count: 2_000 })
      expect(made.rows).toBe(2_000)
      expect(made.scenario.synthetic).toMatchObject({
        sampledRows: 1_000,
        generated: ['created_at'],
        fromParentKeys: ['parent_id'],
      })
      expect(made.scenario.synthetic?.fromSample).toContain('body')
      const perRow = (cost: typeof own) => cost.walBytes / cost.rows
      expect(Math.abs(perRow(made) - perRow(own)) / perRow(own)).toBeLessThan(0.1)
      // The partial index takes the sampled share of open rows: about one in ten.
      const open = made.indexes.find((index) => index.name === 'wide_open')?.records ?? 0
      expect(open).toBeGreaterThan(100)
      expect(open).toBeLessThan(350)
    } finally {
      await test.close()
    }
  })
})
