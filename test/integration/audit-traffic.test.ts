import pg from 'pg'
import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import { auditIndexes } from '../../src/index.js'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'

/**
 * From a connection of its own, committed inserts (which write every index) and lookups by
 * account (which scan orders_account only), until `stop` says.
 */
async function workload(url: string, stop: () => boolean): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('set enable_seqscan = off')
    for (let i = 0; !stop(); i++) {
      // Keys below the prefill's: the audit's synthetic rows, measured while this runs, take keys above its largest.
      await client.query(
        `insert into orders (id, account, note) select -g, g % 97, md5(g::text) from generate_series($1::int8, $1::int8 + 99) g`,
        [1 + i * 100],
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

  it('names the index the workload writes but never scans a drop candidate, with its observed bytes, and keeps the scanned one', async () => {
    let running = true
    const writing = workload(test.url!, () => !running)
    let audit: Awaited<ReturnType<typeof auditIndexes>>
    try {
      audit = await auditIndexes({
        db: test.url!,
        table: 'orders',
        traffic: { durationMs: 4_000 },
        minStatsAgeDays: 0,
        count: 1_000,
        sampleRows: 5_000,
      })
    } finally {
      running = false
    }
    await writing
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
  })
})
