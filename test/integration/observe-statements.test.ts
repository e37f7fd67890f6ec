import pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { formatResult, observeWal } from '../../src/index.js'
import { topScreen } from '../../src/report/top-view.js'
import { describeOnPostgres } from '../support/backends.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'
import { topIntervals } from '../support/replication-route.js'

/** The WAL records of transaction `xid` between two positions, its commit left out, by pg_walinspect. */
async function transactionWal(client: pg.Client, xid: string, start: string, end: string) {
  const [records] = (
    await client.query<{ records: string; bytes: string }>(
      `select count(*)::text as records, coalesce(sum(record_length), 0)::text as bytes
         from pg_get_wal_records_info($2::pg_lsn, $3::pg_lsn)
        where xid = $1::xid and not (resource_manager = 'Transaction' and record_type = 'COMMIT')`,
      [xid, start, end],
    )
  ).rows
  const [images] = (
    await client.query<{ fpi: string }>(
      `select count(*)::text as fpi from pg_get_wal_block_info($2::pg_lsn, $3::pg_lsn, false)
        where xid = $1::xid and block_fpi_length > 0`,
      [xid, start, end],
    )
  ).rows
  return { walRecords: Number(records!.records), walBytes: Number(records!.bytes), walFpi: Number(images!.fpi) }
}

/** Runs `sql` in a transaction whose xid is taken first, so that every record it writes carries it. */
async function inTransaction(client: pg.Client, sql: string): Promise<string> {
  await client.query('begin')
  const [row] = (await client.query<{ xid: string }>('select pg_current_xact_id()::text as xid')).rows
  await client.query(sql)
  await client.query('commit')
  return row!.xid
}

// A server of its own: pg_stat_statements must be preloaded, and the suite's server has it not.
describeOnPostgres('observeWal by statement, for a role that may read neither WAL nor pg_walinspect', () => {
  let server: RunningServer
  let admin: pg.Client
  let observerUrl: string
  beforeAll(async () => {
    server = await startPostgres(['-c', 'shared_preload_libraries=pg_stat_statements'])
    admin = new pg.Client({ connectionString: server.url })
    await admin.connect()
    await admin.query(`create extension pg_stat_statements; create extension pg_walinspect;
      create role observer login password 'observer';
      create table items (id int8, v int4, note text) with (autovacuum_enabled = false);
      create index items_v on items (v);
      insert into items select i, i % 100, 'n' from generate_series(1, 20000) i;
      grant insert on items to observer`)
    observerUrl = server.url.replace(/\/\/[^@]*@/, '//observer:observer@')
  })
  afterAll(async () => {
    await admin?.end()
    await server?.stop()
  })

  it("gives pg_stat_statements' WAL by statement beside the totals, labelled, equal to pg_walinspect's reading of each transaction", async () => {
    // The role's own statements are named; another role's are summed, as the role may not see them.
    const own = new pg.Client({ connectionString: observerUrl })
    await own.connect()
    // Planning is no part of a statement's counters, and a connection's first plans read (and set
    // hint bits on) catalog pages: the same statements once before, so that the window's write only in them.
    await inTransaction(own, `insert into items select i, i % 100, 'w' from generate_series(100001, 100010) i`)
    await inTransaction(admin, `update items set v = v + 1 where id <= 10`)
    await admin.query('checkpoint')
    let xids: { insert: string; update: string } | undefined
    try {
      const observation = await observeWal({
        db: observerUrl,
        run: async () => {
          xids = {
            insert: await inTransaction(
              own,
              `insert into items select i, i % 100, 'w' from generate_series(100001, 103000) i`,
            ),
            update: await inTransaction(admin, `update items set v = v + 1 where id <= 2000`),
          }
        },
      })
      expect(observation.attribution).toBe('lsn')
      expect(observation.relations).toBeNull()
      const { window } = observation
      expect(observation.attributionNote).toContain('statements is the WAL by statement from pg_stat_statements')
      expect(observation.attributionNote).toContain('GRANT EXECUTE ON FUNCTION pg_read_binary_file')
      const statements = observation.statements!
      expect(statements.source).toBe('pg_stat_statements')
      expect(statements.evicted).toBe(0)

      const insert = statements.statements.find((statement) => statement.query?.startsWith('insert into items'))!
      expect(insert).toMatchObject({ role: 'observer', database: 'postgres', topLevel: true, calls: 1 })
      expect(insert.queryId).toMatch(/^-?\d+$/)
      const insertWal = await transactionWal(admin, xids!.insert, window.startLsn, window.endLsn)
      // A heap and an index record a row at least, and the checkpoint made the first changes images.
      expect(insertWal.walRecords).toBeGreaterThanOrEqual(6000)
      expect(insertWal.walFpi).toBeGreaterThan(0)
      expect({ walRecords: insert.walRecords, walBytes: insert.walBytes, walFpi: insert.walFpi }).toEqual(insertWal)

      // The other role's statements: no queryid or text, only its name and what they wrote.
      const hidden = statements.statements.filter((statement) => statement.role === 'postgres')
      expect(hidden).toHaveLength(1)
      expect(hidden[0]).toMatchObject({ queryId: null, query: null, database: 'postgres', topLevel: true })
      const updateWal = await transactionWal(admin, xids!.update, window.startLsn, window.endLsn)
      expect(updateWal.walRecords).toBeGreaterThanOrEqual(4000)
      expect({ walRecords: hidden[0]!.walRecords, walBytes: hidden[0]!.walBytes, walFpi: hidden[0]!.walFpi }).toEqual(
        updateWal,
      )
      // Commits and background work are in no statement: the statements sum to less than the window.
      const summed = statements.statements.reduce((sum, statement) => sum + statement.walBytes, 0)
      expect(summed).toBeLessThan(window.bytes)
      expect(summed).toBeGreaterThan(0.5 * window.bytes)
      // The text shows each statement beside the unsplit total, labelled with its source.
      const text = formatResult(observation)
      expect(text).toContain('WAL (not split)')
      expect(text).toMatch(/insert into items select .*statement \(pg_stat_statements\)/)
      expect(text).toMatch(/statements of postgres \(text not visible\) +statement \(pg_stat_statements\)/)
    } finally {
      await own.end()
    }
  })

  it("walcost top gives each totals-only interval pg_stat_statements' WAL by statement, and sums them since the start", async () => {
    const own = new pg.Client({ connectionString: observerUrl })
    await own.connect()
    let next = 200_000
    try {
      const intervals = await topIntervals(observerUrl, 6, async () => {
        for (let round = 0; round < 6; round++, next += 500) {
          await own.query(
            `insert into items select i, i % 100, 'top' from generate_series($1::int8, $1::int8 + 499) i`,
            [next],
          )
          await new Promise((resolve) => setTimeout(resolve, 200))
        }
      })
      expect(intervals.length).toBeGreaterThanOrEqual(2)
      let insertBytes = 0
      for (const interval of intervals) {
        expect(interval.walSource === 'statements' || interval.statements === null).toBe(true)
        expect(interval.relations).toBeNull()
        const inserts = (interval.statements?.statements ?? []).filter(
          (statement) => statement.role === 'observer' && statement.query?.startsWith('insert into items'),
        )
        for (const insert of inserts) {
          expect(insert.walBytes).toBeLessThanOrEqual(interval.window.bytes)
          insertBytes += insert.walBytes
        }
      }
      // At least half of the 3,000 rows inside the run, each in a heap and an index: 100 bytes a row or more.
      expect(insertBytes).toBeGreaterThan(1_500 * 100)
      // The screen shows them under the totals, labelled with their source.
      const shown = intervals.find((interval) => (interval.statements?.statements.length ?? 0) > 0)!
      expect(topScreen(shown, shown, 10)).toMatch(/statement \(pg_stat_statements\) +WAL\/s +share/)
    } finally {
      await own.end()
    }
  })
})
