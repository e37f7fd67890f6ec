import pg from 'pg'
import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import { auditIndexes } from '../../src/index.js'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { failure } from '../support/faults.js'

/**
 * From a connection of its own, committed inserts (which write every index; keys from `from` on)
 * and lookups by account (which scan orders_account only), until `stop` says.
 */
async function workload(url: string, stop: () => boolean, from: number): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('set enable_seqscan = off')
    for (let i = 0; !stop(); i++) {
      // Keys below the prefill's: the audit's synthetic rows, measured while this runs, take keys above its largest.
      await client.query(
        `insert into orders (id, account, note) select -g, g % 97, md5(g::text) from generate_series($1::int8, $1::int8 + 99) g`,
        [from + i * 100],
      )
      await client.query('select count(*) from orders where account = $1', [i % 97])
    }
  } finally {
    await client.end()
  }
}

describeOnPostgres('auditIndexes from real traffic on PostgreSQL 18', () => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(`create table orders (id int8 primary key, account int4 not null, note text);
      create index orders_account on orders (account);
      create index orders_note on orders (note);
      insert into orders select g, g % 97, md5(g::text) from generate_series(1, 20000) g;
      analyze orders`)
  })
  afterAll(async () => {
    await test.close()
  })

  /** The audit judged on a window of `durationMs` of the workload, which runs until it returns. */
  let keys = 1
  const auditUnderWorkload = async (durationMs: number, minStatsAgeDays: number) => {
    let running = true
    // Each run's keys apart from the last one's: far enough that no run reaches the next one's.
    const writing = workload(test.url!, () => !running, keys)
    keys += 100_000_000
    try {
      return await auditIndexes({
        db: test.url!,
        table: 'orders',
        traffic: { durationMs },
        minStatsAgeDays,
        count: 1_000,
        sampleRows: 5_000,
      })
    } finally {
      running = false
      await writing
    }
  }

  it('names the index the workload writes but never scans a drop candidate, with its observed bytes, and keeps the scanned one', async () => {
    const audit = await auditUnderWorkload(4_000, 0)
    expect(audit.traffic!.durationMs).toBeGreaterThanOrEqual(4_000)
    const byName = Object.fromEntries(audit.indexes.map((index) => [index.name, index]))
    const note = byName.orders_note!
    expect(note.traffic!.idxScan).toBe(0)
    expect(note.traffic!.walBytes).toBeGreaterThan(10_000)
    expect(note.traffic!.records).toBeGreaterThan(100)
    expect(note.verdict).toBe('drop-candidate')
    expect(note.reason).toContain('never scanned')
    const account = byName.orders_account!
    expect(account.traffic!.idxScan).toBeGreaterThan(0)
    expect(account.traffic!.walBytes).toBeGreaterThan(10_000)
    expect(account.verdict).toBe('keep')
    const pkey = byName.orders_pkey!
    expect(pkey.verdict).toBe('keep')
    expect(pkey.backsConstraint).toBe('primary key')
    // The measured saving is of the candidate the traffic named.
    expect(audit.bytesPerRowWithoutDropCandidates).not.toBeNull()
    expect(audit.bytesPerRowWithoutDropCandidates!).toBeLessThan(audit.bytesPerRow)
    // The window closed before the audit measured anything: its own runs are not in it.
    const [order] = await test.query<{ before: boolean }>(
      'select bool_and($1::pg_lsn <= start) as before from unnest($2::pg_lsn[]) start',
      [audit.traffic!.endLsn, Object.values(audit.scenarios).map((cost) => cost.window.startLsn)],
    )
    expect(order!.before).toBe(true)
  })

  it('judges a window shorter than minStatsAgeDays, and an index it neither wrote nor scanned, as review', async () => {
    // Never written by the workload, whose accounts are 0 to 96.
    await test.exec('create index orders_unused on orders (account) where account < 0')
    let audit: Awaited<ReturnType<typeof auditIndexes>>
    try {
      audit = await auditUnderWorkload(2_000, 1)
    } finally {
      await test.exec('drop index orders_unused')
    }
    const byName = Object.fromEntries(audit.indexes.map((index) => [index.name, index]))
    expect(byName.orders_note!.traffic!.walBytes).toBeGreaterThan(10_000)
    expect(byName.orders_note!.traffic!.idxScan).toBe(0)
    expect(byName.orders_note!.verdict).toBe('review')
    expect(byName.orders_unused!.traffic).toEqual({ walBytes: 0, records: 0, fpiCount: 0, idxScan: 0 })
    expect(byName.orders_unused!.verdict).toBe('review')
    expect(byName.orders_account!.verdict).toBe('keep')
    expect(audit.bytesPerRowWithoutDropCandidates).toBeNull()
  })

  it('refuses traffic for a role that may not read WAL files, naming the grant, before any window', async () => {
    const role = `walcost_auditor_${Math.random().toString(36).slice(2, 8)}`
    await test.exec(`create role ${role} login password 'auditor'; grant select, insert on orders to ${role}`)
    try {
      const error = await failure(
        auditIndexes({
          db: test.url!.replace(/\/\/[^@]*@/, `//${role}:auditor@`),
          table: 'orders',
          // Long enough that waiting it out would fail the test's timeout.
          traffic: { durationMs: 3_600_000 },
          minStatsAgeDays: 0,
        }),
      )
      expect(error.code).toBe('PERMISSION_DENIED')
      expect(error.field).toBe('traffic')
      expect(error.message).toContain('GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint)')
    } finally {
      await test.exec(`drop owned by ${role}; drop role ${role}`)
    }
  })

  it('refuses traffic on PGlite, which runs one session', async () => {
    const error = await failure(
      auditIndexes({
        table: 'orders',
        setup: 'create table orders (id int8 primary key)',
        traffic: { durationMs: 1_000 },
      }),
    )
    expect(error.code).toBe('INVALID_OPTIONS')
    expect(error.field).toBe('traffic')
  })
})
