import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WalReader } from '../../src/decode/reader.js'
import type { Session } from '../../src/driver/types.js'
import { measureInsertCost } from '../../src/index.js'
import { readWindow } from '../../src/wal/attribution.js'
import { followWal, WINDOW_END_MARK } from '../../src/wal/follow.js'
import { walBytes } from '../../src/wal/segments.js'
import { readServer } from '../../src/wal/server.js'
import { insertPosition } from '../../src/wal/snapshot.js'
import { expectConsistent } from '../support/assertions.js'
import { backends, openTestSession, type TestDatabase } from '../support/backends.js'
import { batch, closeWindow, layoutOf, MIXED_SETUP, walStatsOf, windowOf } from '../support/wal-window.js'

describe.each(backends)('our WAL reader on $name', (backend) => {
  let test: TestDatabase
  let session: Session
  beforeAll(async () => {
    test = await backend.open()
    await test.exec(MIXED_SETUP)
    session = await openTestSession(test.db)
  })
  afterAll(async () => {
    await session.close()
    await test.close()
  })

  it.each(['off', 'pglz'])(
    'agrees with pg_get_wal_stats record for record, with wal_compression %s',
    async (compression) => {
      const window = await windowOf(session, compression)
      const layout = await layoutOf(session)
      const read = await readWindow(session, layout, window.start, window.end, window.xids, true)
      expect(Object.fromEntries(read.byType!)).toEqual(await walStatsOf(session, window))
      // The window holds every access method's records, images (compressed where asked) and a switch.
      const types = [...read.byType!.keys()]
      for (const manager of ['Heap', 'Btree', 'Gist', 'Gin', 'Hash', 'XLOG'])
        expect(types.some((type) => type.startsWith(`${manager}/`))).toBe(true)
      expect(types).toContain('XLOG/SWITCH')
      expect([...read.byType!.values()].reduce((sum, type) => sum + type.fpiBytes, 0)).toBeGreaterThan(0)
    },
  )

  it('reads a window longer than a WAL segment, with records that continue into the next segment file', async () => {
    await test.exec(`create table long_window (id int8 primary key, at timestamptz not null, device int4 not null, v float8 not null)
      with (autovacuum_enabled = false);
      create index long_window_device on long_window (device, at); create index long_window_at on long_window (at)`)
    const layout = await layoutOf(session)
    await session.exec('begin')
    const start = await insertPosition(session)
    await session.exec(
      `insert into long_window select i, timestamptz '2026-01-01' + i * interval '1 s', i % 1000, i from generate_series(1, 120000) i`,
    )
    const window = await closeWindow(session, start)
    expect(window.end.bytes - window.start.bytes).toBeGreaterThan(layout.segmentSize)
    const read = await readWindow(session, layout, window.start, window.end, window.xids, true)
    expect(Object.fromEntries(read.byType!)).toEqual(await walStatsOf(session, window))
    // The same window once more, counting the records whose bytes run into the next segment file.
    let crossing = 0
    const reader = new WalReader({ ...layout, verifyCrc: true }, window.start.bytes, window.end.bytes, (record) => {
      if (
        Math.floor(record.lsn / layout.segmentSize) !==
        Math.floor((record.lsn + record.totalLength) / layout.segmentSize)
      )
        crossing += 1
    })
    for await (const chunk of walBytes(session, reader.readFrom, window.end.bytes, layout.segmentSize))
      reader.push(chunk)
    reader.finish()
    expect(crossing).toBeGreaterThan(0)
  })

  it('reads the same records however the bytes are cut into chunks: pages read in place or put together', async () => {
    const window = await windowOf(session, 'pglz')
    const layout = await layoutOf(session)
    const probe = new WalReader(layout, window.start.bytes, window.end.bytes, () => undefined)
    const parts: Uint8Array[] = []
    for await (const chunk of walBytes(session, probe.readFrom, window.end.bytes, layout.segmentSize))
      parts.push(chunk.slice())
    const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
    let filled = 0
    for (const part of parts) {
      bytes.set(part, filled)
      filled += part.length
    }
    const recordsCutEvery = (size: number) => {
      const seen: string[] = []
      const reader = new WalReader({ ...layout, verifyCrc: true }, window.start.bytes, window.end.bytes, (record) => {
        const blocks = record.blocks
          .slice(0, record.blockCount)
          .map((block) => `${block.relNumber}:${block.imageBytes}`)
        seen.push(`${record.lsn} ${record.totalLength} ${record.xid} ${blocks.join(',')} ${record.mainDataLength}`)
      })
      for (let at = 0; at < bytes.length; at += size) reader.push(bytes.subarray(at, at + size))
      reader.finish()
      return seen
    }
    const whole = recordsCutEvery(bytes.length)
    expect(whole.length).toBeGreaterThan(1_000)
    for (const size of [layout.blockSize, layout.blockSize + 13, 3 * layout.blockSize - 1, 4_999, 257])
      expect(recordsCutEvery(size)).toEqual(whole)
  })

  it.runIf(backend.name === 'postgres')(
    'reads the WAL on a second session while the batch writes it, and finds what pg_get_wal_stats finds',
    async () => {
      await test.exec(`create table followed (id int8 primary key, at timestamptz not null, device int4 not null, v float8 not null)
        with (autovacuum_enabled = false); create index followed_device on followed (device, at)`)
      const server = await readServer(session)
      const reading = await openTestSession(test.db)
      try {
        await session.exec('begin')
        const [{ pid } = { pid: 0 }] = await session.query<{ pid: number }>('select pg_backend_pid() as pid')
        const start = await insertPosition(session)
        const follower = followWal(reading, server, start, { pid, session })
        await session.exec(
          `insert into followed select i, timestamptz '2026-01-01' + i * interval '1 s', i % 1000, i from generate_series(1, 150000) i`,
        )
        // Over half a segment of the window was read while the batch ran.
        expect(follower.position - start.bytes).toBeGreaterThan(server.facts.walSegmentSize / 2)
        const [state] = await session.query<{ bytes: string; lsn: string; written: string; xids: string[] }>(
          `select ${WINDOW_END_MARK} pg_current_wal_insert_lsn()::text as lsn, (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as bytes,
                  (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as written, array_agg(transactionid::text) as xids from pg_locks where pid = pg_backend_pid() and locktype = 'transactionid'`,
        )
        const end = { lsn: state!.lsn, bytes: Number(state!.bytes), written: Number(state!.written) }
        const tally = await follower.finish(end, 10_000)
        await session.exec('rollback')
        const window = { start, end, xids: state!.xids }
        expect(end.bytes - start.bytes).toBeGreaterThan(server.facts.walSegmentSize)
        const followed = tally.attribute(window.xids)
        expect(Object.fromEntries(followed.byType!)).toEqual(await walStatsOf(session, window))
        const afterwards = await readWindow(session, await layoutOf(session), start, end, window.xids)
        expect(followed).toEqual(afterwards)
      } finally {
        await reading.close()
      }
    },
  )

  it('splits our records by relation exactly as an independent reading of each block does', async () => {
    const window = await windowOf(session, 'off')
    const layout = await layoutOf(session)
    const read = await readWindow(session, layout, window.start, window.end, window.xids)
    // pg_get_wal_block_info lists every block reference: a record's own bytes go to its first
    // block's relation, each image to its own block's.
    const rows = await session.query<{
      relfilenode: string
      type: string
      records: string
      bytes: string
      fpi_bytes: string
      fpi_count: string
    }>(
      `
      with block as (
        select start_lsn, block_id, relfilenode::text as relfilenode, resource_manager || '/' || record_type as type,
               record_length, block_fpi_length, block_fpi_info is not null as image
          from pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn, false) where xid = any ($3::xid[])),
      record as (
        select distinct on (start_lsn) start_lsn, relfilenode, type, record_length - sum(block_fpi_length) over (partition by start_lsn) as own
          from block order by start_lsn, block_id),
      part as (
        select relfilenode, type, 1 as records, own as bytes, 0 as fpi_bytes, 0 as fpi_count from record
        union all
        select relfilenode, type, 0, block_fpi_length, block_fpi_length, 1 from block where image)
      select relfilenode, type, sum(records)::text as records, sum(bytes)::text as bytes, sum(fpi_bytes)::text as fpi_bytes, sum(fpi_count)::text as fpi_count
        from part group by 1, 2`,
      [window.start.lsn, window.end.lsn, window.xids],
    )
    const independent = Object.fromEntries(
      rows.map((row) => [
        `${row.relfilenode} ${row.type}`,
        {
          records: Number(row.records),
          bytes: Number(row.bytes),
          fpiBytes: Number(row.fpi_bytes),
          fpiCount: Number(row.fpi_count),
        },
      ]),
    )
    const ours = Object.fromEntries(
      [...read.ours]
        .filter(([relation]) => relation !== '')
        .flatMap(([relation, types]) =>
          types.map((wal) => [
            `${relation} ${wal.type}`,
            { records: wal.records, bytes: wal.bytes, fpiBytes: wal.fpiBytes, fpiCount: wal.fpiCount },
          ]),
        ),
    )
    expect(ours).toEqual(independent)
  })

  it("reports the GiST and hash indexes' bytes and images in full, with little left as other", async () => {
    const cost = await measureInsertCost({ db: test.db, table: 'mixed', sql: batch(300_000, 2_000), checkpoint: true })
    expect(cost.attribution).toBe('wal')
    const gist = cost.indexes.find((index) => index.name === 'mixed_p')!
    const hash = cost.indexes.find((index) => index.name === 'mixed_h')!
    expect(gist.records).toBeGreaterThan(2_000)
    expect(hash.records).toBeGreaterThanOrEqual(2_000)
    expect(gist.fpiCount + hash.fpiCount).toBeGreaterThan(0)
    expectConsistent(cost)
    expect(cost.otherRelations).toEqual([])
    expect(cost.breakdown!.otherBytes / cost.walBytes).toBeLessThan(0.03)
  })

  it("names every other relation the batch wrote: a trigger's table and its index, a foreign key's parent", async () => {
    await test.exec(`
      create table parent (id int4 primary key, name text);
      insert into parent select i, 'p' || i from generate_series(1, 100) i;
      create table child (id int8 primary key, parent_id int4 not null references parent, at timestamptz not null) with (autovacuum_enabled = false);
      create table child_audit (id bigint generated always as identity primary key, child_id int8 not null, at timestamptz not null default now());
      create function child_audit_row() returns trigger language plpgsql as $$
        begin insert into child_audit (child_id) values (new.id); return new; end $$;
      create trigger child_audited after insert on child for each row execute function child_audit_row()`)
    const cost = await measureInsertCost({
      db: test.db,
      table: 'child',
      checkpoint: true,
      sql: 'insert into child select i, 1 + i % 100, now() from generate_series(1, 2000) i',
    })
    expectConsistent(cost)
    const named = Object.fromEntries(cost.otherRelations.map((relation) => [relation.name, relation]))
    expect(named.child_audit?.kind).toBe('table')
    expect(named.child_audit?.recordTypes.map((type) => type.type)).toContain('Heap/INSERT')
    expect(named.child_audit_pkey?.kind).toBe('index')
    expect(named.child_audit_pkey!.records).toBeGreaterThanOrEqual(2_000)
    // The foreign key's check locks each parent row it finds, once a transaction.
    expect(named.parent?.recordTypes.map((type) => type.type)).toContain('Heap/LOCK')
    expect(named.child_audit_id_seq?.kind).toBe('sequence')
    expect(cost.breakdown!.otherRelationBytes).toBe(
      cost.otherRelations.reduce((sum, relation) => sum + relation.walBytes - relation.fpiBytes, 0),
    )
    expect(cost.breakdown!.otherBytes / cost.walBytes).toBeLessThan(0.03)
  })
})
