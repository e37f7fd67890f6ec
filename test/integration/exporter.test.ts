import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { serveWalMetrics, WalcostError } from '../../src/index.js'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { BLOCK_INFO_BY_FILE } from '../support/block-info.js'
import {
  gauge,
  type RunningExporter,
  type Sample,
  samplesOf,
  scrapeUntil,
  startExporter,
  sumOf,
} from '../support/exporter.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'
import { selectedBackends } from '../support/selected-backends.js'

const RELATION_COUNTERS = [
  'walcost_wal_bytes_total',
  'walcost_wal_records_total',
  'walcost_wal_fpi_total',
  'walcost_wal_fpi_bytes_total',
]

/**
 * Committed inserts into each of `tables` (`rows(i)` rows into the i-th, keys from `from` on) in a
 * loop from a connection of its own, until `stop` says.
 */
async function workload(url: string, tables: string[], rows: (i: number) => number, stop: () => boolean, from = 0) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    for (let round = 0; !stop(); round++) {
      for (const [i, table] of tables.entries()) {
        await client.query(
          `insert into ${table} (id, account, payload) select g, g % 97, md5(g::text) from generate_series($1::int8, $1::int8 + $2 - 1) g`,
          [from + round * 10_000, rows(i)],
        )
      }
    }
  } catch (error) {
    // The server restarted under it: the test of that ends the workload with it.
    if (!stop()) throw error
  } finally {
    await client.end().catch(() => undefined)
  }
}

/** Every relation series' bytes plus the unattributed WAL: what the exporter counted. */
const counted = (samples: Sample[]) =>
  sumOf(samples, 'walcost_wal_bytes_total') + sumOf(samples, 'walcost_wal_unattributed_bytes_total')

/** pg_get_wal_block_info's bytes by relation file of `database` over [from, to) in bytes from 0/0. */
async function blockInfoBytes(test: TestDatabase, from: number, to: number): Promise<Map<string, number>> {
  const lsn = (bytes: number) => `${Math.floor(bytes / 2 ** 32).toString(16)}/${(bytes % 2 ** 32).toString(16)}`
  const [{ oid } = { oid: '' }] = await test.query<{ oid: string }>(
    'select oid::text from pg_database where datname = current_database()',
  )
  const rows = await test.query<{ database: string; relfilenode: string; bytes: string }>(BLOCK_INFO_BY_FILE, [
    lsn(from),
    lsn(to),
  ])
  const byFile = new Map<string, number>()
  for (const row of rows.filter((row) => row.database === oid))
    byFile.set(row.relfilenode, (byFile.get(row.relfilenode) ?? 0) + Number(row.bytes))
  return byFile
}

describe.runIf(selectedBackends().includes('pglite'))('serveWalMetrics on PGlite', () => {
  it('refuses PGlite, saying why and what to give instead, and listens on nothing', async () => {
    const { PGlite } = await import('@electric-sql/pglite')
    const db = await PGlite.create()
    try {
      const refused = await serveWalMetrics({ db, listen: '127.0.0.1:0' }).catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(WalcostError)
      expect((refused as WalcostError).code).toBe('INVALID_OPTIONS')
      expect((refused as WalcostError).field).toBe('db')
      expect((refused as WalcostError).message).toContain('PGlite runs one session')
      expect((refused as WalcostError).message).toContain('connection URL')
    } finally {
      await db.close()
    }
  })
})

describeOnPostgres('walcost exporter on PostgreSQL 18', () => {
  let test: TestDatabase
  const tables = Array.from({ length: 10 }, (_, i) => `t${i}`)
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(`create table events (id int8 primary key, account int4 not null, payload text);
      create index events_account on events (account);
      ${tables.map((table) => `create table ${table} (id int8, account int4, payload text)`).join(';\n')}`)
  })
  afterAll(async () => {
    await test?.close()
  })

  it("counts each relation's WAL as pg_get_wal_block_info does over the same window, and every byte read", async () => {
    const exporter = await startExporter(['--url', test.url!, '--interval', '1', '--label', 'server=primary'])
    let running = true
    const writing = workload(
      test.url!,
      ['events'],
      () => 200,
      () => !running,
    )
    try {
      const events = { relation: 'events', schema: 'public', kind: 'table', server: 'primary' }
      const first = await scrapeUntil(exporter, (samples) => sumOf(samples, 'walcost_wal_records_total', events) > 0)
      const start = gauge(first, 'walcost_wal_read_lsn_bytes')
      const last = await scrapeUntil(
        exporter,
        (samples) =>
          gauge(samples, 'walcost_wal_read_lsn_bytes') > start &&
          sumOf(samples, 'walcost_wal_records_total', events) >=
            sumOf(first, 'walcost_wal_records_total', events) + 2000,
      )
      const end = gauge(last, 'walcost_wal_read_lsn_bytes')
      running = false
      await writing

      expect(gauge(last, 'walcost_up')).toBe(1)
      expect(samplesOf(last, 'walcost_wal_source', { source: 'files' })[0]?.value).toBe(1)
      // The constant label is on every series, the process metrics' too.
      expect(last.filter((sample) => sample.labels.server !== 'primary')).toEqual([])
      expect(samplesOf(last, 'process_resident_memory_bytes')).toHaveLength(1)
      // Every byte read is in a relation's counter or an unattributed one, exactly.
      expect(counted(last) - counted(first)).toBe(end - start)
      expect(gauge(last, 'walcost_wal_missed_bytes_total')).toBe(0)

      const files = await test.query<{ name: string; node: string }>(
        `select relname::text as name, pg_relation_filenode(oid)::text as node from pg_class
          where relname in ('events', 'events_pkey', 'events_account')`,
      )
      const independent = await blockInfoBytes(test, start, end)
      for (const { name, node } of files) {
        const labels = { relation: name, database: test.url!.split('/').at(-1)! }
        const bytes = sumOf(last, 'walcost_wal_bytes_total', labels) - sumOf(first, 'walcost_wal_bytes_total', labels)
        const theirs = independent.get(node) ?? 0
        expect(theirs).toBeGreaterThan(100_000)
        expect(Math.abs(bytes - theirs)).toBeLessThanOrEqual(0.005 * theirs)
      }
      const index = samplesOf(last, 'walcost_wal_bytes_total', { relation: 'events_account' })[0]!
      expect(index.labels).toMatchObject({ kind: 'index', table: 'public.events', schema: 'public' })
    } finally {
      running = false
      await writing
      expect(await exporter.stop()).toBe(0)
    }
    // Nothing left on the server: its temporary slot went with its session.
    expect(await test.query(`select slot_name from pg_replication_slots where slot_name like 'walcost\\_%'`)).toEqual(
      [],
    )
  }, 180_000)

  it('with --top 3 names three relations of a database and adds the others up in relation="other", to the same totals', async () => {
    const exporter = await startExporter(['--url', test.url!, '--interval', '1', '--top', '3'])
    let running = true
    const writing = workload(
      test.url!,
      tables,
      (i) => 20 * (i + 1),
      () => !running,
    )
    const database = test.url!.split('/').at(-1)!
    try {
      const mine = { database }
      const first = await scrapeUntil(
        exporter,
        (samples) => sumOf(samples, 'walcost_wal_bytes_total', { ...mine, relation: 'other' }) > 0,
      )
      const start = gauge(first, 'walcost_wal_read_lsn_bytes')
      const last = await scrapeUntil(
        exporter,
        (samples) => gauge(samples, 'walcost_wal_read_lsn_bytes') > start + 1_000_000,
      )
      const end = gauge(last, 'walcost_wal_read_lsn_bytes')
      running = false
      await writing

      for (const name of RELATION_COUNTERS) {
        const relations = new Set(samplesOf(last, name, mine).map((sample) => sample.labels.relation))
        expect(relations.size).toBe(4)
        expect(relations.has('other')).toBe(true)
      }
      expect(counted(last) - counted(first)).toBe(end - start)
      // The database's series, named and other, hold what pg_walinspect finds of its files over the window.
      const independent = [...(await blockInfoBytes(test, start, end)).values()].reduce((sum, bytes) => sum + bytes, 0)
      const ours = sumOf(last, 'walcost_wal_bytes_total', mine) - sumOf(first, 'walcost_wal_bytes_total', mine)
      expect(independent).toBeGreaterThan(100_000)
      expect(Math.abs(ours - independent)).toBeLessThanOrEqual(0.005 * independent)
    } finally {
      running = false
      await writing
      expect(await exporter.stop()).toBe(0)
    }
  }, 180_000)
})

describeOnPostgres('walcost exporter across a server restart', () => {
  let server: RunningServer
  let exporter: RunningExporter | undefined
  beforeAll(async () => {
    server = await startPostgres()
    const admin = new pg.Client({ connectionString: server.url })
    await admin.connect()
    await admin.query('create table events (id int8 primary key, account int4 not null, payload text)')
    await admin.end()
  })
  afterAll(async () => {
    await exporter?.stop()
    await server?.stop()
  })

  it('drops walcost_up to 0 and back to 1, and counts or marks missed every byte, counters never going backwards', async () => {
    exporter = await startExporter(['--url', server.url, '--interval', '1'])
    const scrapes: Sample[][] = []
    const keep = (samples: Sample[]) => {
      scrapes.push(samples)
      return samples
    }
    let running = true
    let writing = workload(
      server.url,
      ['events'],
      () => 200,
      () => !running,
    )
    const first = await scrapeUntil(
      exporter,
      (samples) => keep(samples) && sumOf(samples, 'walcost_wal_records_total') > 0,
    )
    expect(gauge(first, 'walcost_up')).toBe(1)
    running = false
    await writing

    const restarting = server.restart()
    await scrapeUntil(exporter, (samples) => keep(samples) && gauge(samples, 'walcost_up') === 0)
    await restarting
    running = true
    writing = workload(
      server.url,
      ['events'],
      () => 200,
      () => !running,
      1e9,
    )
    const back = await scrapeUntil(
      exporter,
      (samples) =>
        keep(samples) &&
        gauge(samples, 'walcost_up') === 1 &&
        gauge(samples, 'walcost_wal_read_lsn_bytes') > gauge(first, 'walcost_wal_read_lsn_bytes') + 100_000,
      120_000,
    )
    running = false
    await writing

    expect(exporter.stderr()).toMatch(/CONNECTION_FAILED.*Connecting again in \d+(\.\d+)? s/)
    // Counters never went backwards from one scrape to the next, series by series.
    const counters = (samples: Sample[]) =>
      new Map(
        samples
          .filter((sample) => sample.name.startsWith('walcost_') && sample.name.endsWith('_total'))
          .map((sample) => [`${sample.name}${JSON.stringify(sample.labels)}`, sample.value]),
      )
    for (let i = 1; i < scrapes.length; i++) {
      const before = counters(scrapes[i - 1]!)
      const after = counters(scrapes[i]!)
      for (const [series, value] of before) expect(after.get(series) ?? 0).toBeGreaterThanOrEqual(value)
    }
    // The WAL from before the restart to after it was counted or is in the missed bytes.
    const read = gauge(back, 'walcost_wal_read_lsn_bytes') - gauge(first, 'walcost_wal_read_lsn_bytes')
    const missed = gauge(back, 'walcost_wal_missed_bytes_total') - gauge(first, 'walcost_wal_missed_bytes_total')
    expect(counted(back) - counted(first) + missed).toBe(read)
    // The shutdown checkpoint is among what was counted, unless its WAL was missed.
    if (missed === 0)
      expect(sumOf(back, 'walcost_wal_unattributed_bytes_total', { kind: 'checkpoints' })).toBeGreaterThan(0)

    expect(await exporter.stop()).toBe(0)
    exporter = undefined
    const admin = new pg.Client({ connectionString: server.url })
    await admin.connect()
    expect((await admin.query('select slot_name from pg_replication_slots')).rows).toEqual([])
    await admin.end()
  }, 240_000)
})
