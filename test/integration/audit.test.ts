import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { auditIndexes, compareRemedies, WalcostError } from '../../src/index.js'
import { formatAudit } from '../../src/report/index.js'
import { footprint } from '../support/assertions.js'
import { backends, describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { terminateWalcostWhen } from '../support/faults.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'

const ORDERS = `
  create table orders (
    id bigserial primary key,
    customer_id int4 not null,
    placed_at timestamptz not null default now(),
    status text not null default 'new',
    total numeric(10, 2) not null) with (fillfactor = 90);
  create index orders_customer_idx on orders (customer_id);
  create index orders_status_placed_idx on orders (status, placed_at);
  insert into orders (customer_id, total) select i % 2000, i % 500 from generate_series(1, 20000) i;
  analyze orders;`

/** The common footprint, and the sequence the scratch copy must not advance. */
async function auditFootprint(test: TestDatabase) {
  return {
    ...(await footprint(test, 'orders')),
    sequence: await test.query(`select last_value::text from orders_id_seq`),
  }
}

/** Makes the index scanned, with the scan counted in pg_stat_user_indexes. */
async function useIndex(test: TestDatabase) {
  await test.exec(`set enable_seqscan = off; set enable_bitmapscan = off`)
  for (let i = 0; i < 5; i++) await test.query(`select id from orders where customer_id = $1`, [i])
  await test.exec(`reset enable_seqscan; reset enable_bitmapscan`)
  await test.query('select pg_stat_force_next_flush()')
  await test.query('select 1')
}

describe.each(backends)('auditIndexes on $name', (backend) => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await backend.open()
    await test.exec(ORDERS)
    await useIndex(test)
  })
  afterAll(() => test.close())

  it('marks only the unscanned index that backs nothing as a drop candidate, and leaves no trace', async () => {
    const before = await auditFootprint(test)
    const audit = await auditIndexes({
      db: test.db,
      table: 'orders',
      sampleRows: 5_000,
      count: 2_000,
      minStatsAgeDays: 0,
      rowsPerSec: 50_000,
    })
    // PGlite clones the whole database for every run; a real server builds a scratch copy of the newest rows.
    if (backend.name === 'pglite') expect([audit.startingState, audit.sample]).toEqual(['clone', null])
    else expect([audit.startingState, audit.sample]).toEqual(['scratch-copy', { rows: 5_000, requested: 5_000 }])
    // What the runs cost the server: at least their own WAL and their own CHECKPOINTs (none on PGlite's clones).
    const runs = Object.values(audit.scenarios)
    if (backend.name === 'pglite') expect(audit.serverCost).toBeNull()
    else {
      expect(audit.serverCost!.walBytes).toBeGreaterThanOrEqual(runs.reduce((sum, run) => sum + run.walBytes, 0))
      expect(audit.serverCost!.checkpointsRequested).toBeGreaterThanOrEqual(
        runs.filter((run) => run.scenario.checkpoint).length,
      )
      expect(formatAudit(audit)).toMatch(
        /The runs cost the server [\d.,]+ (MB|kB|bytes) of WAL .* and [\d,]+ checkpoints? requested\./,
      )
    }
    const byName = Object.fromEntries(audit.indexes.map((index) => [index.name, index]))
    expect(Object.keys(byName).sort()).toEqual(['orders_customer_idx', 'orders_pkey', 'orders_status_placed_idx'])
    expect(byName.orders_pkey).toMatchObject({ verdict: 'keep', backsConstraint: 'primary key' })
    expect(byName.orders_customer_idx!.idxScan).toBeGreaterThan(0)
    expect(byName.orders_customer_idx!.verdict).toBe('keep')
    expect(byName.orders_status_placed_idx).toMatchObject({
      verdict: 'drop-candidate',
      idxScan: 0,
      backsConstraint: null,
    })
    expect(byName.orders_status_placed_idx!.reason).toContain('never scanned')
    for (const index of audit.indexes) {
      expect(index.recordsPerRow).toBeGreaterThanOrEqual(1)
      expect(index.walBytesPerRow).toBeGreaterThan(48)
      expect(index.sizeBytes).toBeGreaterThan(0)
      expect(index.fpiShare).toBeGreaterThanOrEqual(0)
      expect(index.fpiShare).toBeLessThan(1)
    }
    expect(audit.bytesPerRowWithoutDropCandidates).toBeLessThan(audit.bytesPerRow)
    expect(audit.atRate!.savedGBPerDay).toBeCloseTo(
      ((audit.bytesPerRow - audit.bytesPerRowWithoutDropCandidates!) * 50_000 * 86_400) / 1e9,
      6,
    )
    expect(await auditFootprint(test)).toEqual(before)
  })

  it('says the counters are too young to judge by default', async () => {
    const audit = await auditIndexes({ db: test.db, table: 'orders', sampleRows: 1_000, count: 500 })
    const unused = audit.indexes.find((index) => index.name === 'orders_status_placed_idx')!
    expect(audit.statsAgeDays).toBeLessThan(7)
    expect(unused.verdict).toBe('review')
    expect(unused.reason).toContain('too short to judge')
    expect(audit.bytesPerRowWithoutDropCandidates).toBeNull()
  })

  it('refuses a one-shot iterable, which the scenarios could not replay', async () => {
    const rows = (function* () {
      yield { customer_id: 1, total: 1 }
    })()
    const error = await auditIndexes({ db: test.db, table: 'orders', rows }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(WalcostError)
    expect((error as WalcostError).field).toBe('rows')
  })

  // Last: it commits updates to the table.
  it("reads the table's update counters and names the index a sample update's column costs HOT", async () => {
    const counted = async () =>
      (
        await test.query<{ upd: string; hot: string }>(
          `select n_tup_upd::text as upd, n_tup_hot_upd::text as hot from pg_stat_user_tables where relname = 'orders'`,
        )
      )[0]!
    const before = await counted()
    // A non-indexed column of a few rows a page, with room (fillfactor 90): HOT; an indexed one: never.
    await test.exec(`update orders set total = total + 1 where id <= 6000 and id % 20 = 0`)
    await test.exec(`update orders set status = 'paid' where id > 19900`)
    await test.query('select pg_stat_force_next_flush()')
    const after = await counted()
    expect(Number(after.upd) - Number(before.upd)).toBe(400)
    const audit = await auditIndexes({
      db: test.db,
      table: 'orders',
      sampleRows: 1_000,
      count: 500,
      sampleUpdate: 'update orders set status = $1, total = total * 1.1 where id = $2',
    })
    expect(audit.updates).toMatchObject({
      updated: Number(after.upd),
      hotUpdated: Number(after.hot),
      setColumns: ['status', 'total'],
      forcingIndexes: ['orders_status_placed_idx'],
    })
    expect(Number(after.hot) - Number(before.hot)).toBe(300)
    expect(audit.updates.summary).toContain('a column of orders_status_placed_idx: it can never be HOT')
    const blocks = Object.fromEntries(audit.indexes.map((index) => [index.name, index.blocksHot]))
    expect(blocks).toEqual({ orders_customer_idx: false, orders_pkey: false, orders_status_placed_idx: true })
    const without = await auditIndexes({ db: test.db, table: 'orders', sampleRows: 1_000, count: 500 })
    expect(without.updates.setColumns).toBeNull()
    expect(without.indexes.every((index) => index.blocksHot === null)).toBe(true)
  })
})

describeOnPostgres('auditIndexes on a real server under attack', () => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(ORDERS)
  })
  afterAll(() => test.close())

  it('leaves nothing behind when its backend is terminated mid-run', async () => {
    const before = await auditFootprint(test)
    const audit = auditIndexes({ db: test.url!, table: 'orders', sampleRows: 20_000, count: 50_000 }).catch(
      (caught: unknown) => caught,
    )
    // It works on its scratch copy (invisible to us: uncommitted) while it copies the sample.
    await terminateWalcostWhen(test.url!, '%walcost_scratch_%')
    const error = await audit
    expect(error).toBeInstanceOf(WalcostError)
    expect((error as WalcostError).code).toBe('CONNECTION_FAILED')
    expect(await auditFootprint(test)).toEqual(before)
    expect(await test.query(`select relname from pg_class where relname like 'walcost%'`)).toEqual([])
  })

  it('answers what it can for a role without pg_checkpoint or pg_read_server_files, and says which grant is missing', async () => {
    const role = `auditor_${Date.now()}`
    await test.exec(
      `create role ${role} login password 'auditor'; grant select on orders to ${role}; grant create, usage on schema public to ${role}`,
    )
    try {
      const url = test.url!.replace('postgres:walcost@', `${role}:auditor@`)
      const audit = await auditIndexes({
        db: url,
        table: 'orders',
        sampleRows: 2_000,
        count: 1_000,
        minStatsAgeDays: 0,
      })
      expect(audit.skipped.map((entry) => entry.step)).toEqual(['checkpoint', 'attribution'])
      expect(audit.skipped[0]!.reason).toContain('GRANT pg_checkpoint')
      expect(audit.skipped[1]!.reason).toContain('GRANT pg_read_server_files')
      expect(audit.decomposition.method).toBe('differences')
      // Each index's cost comes from dropping it alone on the scratch copy.
      expect(Object.keys(audit.scenarios)).toContain('without:orders_status_placed_idx')
      for (const index of audit.indexes) expect(index.walBytesPerRow).toBeGreaterThan(0)
    } finally {
      await test.exec(
        `revoke all on orders from ${role}; revoke all on schema public from ${role}; drop owned by ${role}; drop role ${role}`,
      )
    }
  })
})

describeOnPostgres('auditIndexes where pg_walinspect is not installed', () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startPostgres()
  })
  afterAll(() => server.stop())

  it("creates it for each read in a savepoint, keeping the audit's own transaction and leaving nothing", async () => {
    const audit = await auditIndexes({
      db: server.url,
      setup: ORDERS,
      table: 'orders',
      sampleRows: 1_000,
      count: 500,
      minStatsAgeDays: 0,
    })
    expect(audit.decomposition.method).toBe('wal')
    expect(audit.indexes).toHaveLength(3)
    const client = new pg.Client({ connectionString: server.url })
    await client.connect()
    try {
      expect((await client.query(`select extname from pg_extension where extname = 'pg_walinspect'`)).rows).toEqual([])
      expect((await client.query(`select nspname from pg_namespace where nspname like 'walcost%'`)).rows).toEqual([])
    } finally {
      await client.end()
    }
  })
})

describeOnPostgres('auditIndexes and compareRemedies on the same table', () => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(`${ORDERS}
      create table customers (id int4 primary key);
      insert into customers select generate_series(0, 1999);
      alter table orders add constraint orders_customer_fk foreign key (customer_id) references customers`)
    await useIndex(test)
  })
  afterAll(() => test.close())

  it("agree on the drop candidates: an unscanned plain index, not a foreign key's lookup index or a scanned one", async () => {
    // Counters this young would keep every index under review: a bound of 0 days lets the judgement decide.
    const audit = await auditIndexes({
      db: test.url!,
      table: 'orders',
      count: 500,
      sampleRows: 5_000,
      minStatsAgeDays: 0,
    })
    const candidates = audit.indexes.filter((index) => index.verdict === 'drop-candidate').map((index) => index.name)
    expect(candidates).toEqual(['orders_status_placed_idx'])
    expect(audit.indexes.find((index) => index.name === 'orders_customer_idx')!.backsConstraint).toBe(
      'foreign key lookup',
    )
    // count rows do not draw foreign keys from the parent yet: the batch is SQL that does.
    const remedies = await compareRemedies({
      db: test.url!,
      table: 'orders',
      compression: ['pglz'],
      minStatsAgeDays: 0,
      runsOn: 'table',
      sql: 'insert into orders (customer_id, total) select i % 2000, 1 from generate_series(1, 500) i',
    })
    const dropping = remedies.remedies.find((remedy) => remedy.kind === 'drop-indexes')!
    expect(dropping.name).toBe(`drop ${candidates.join(', ')}`)
    expect(dropping.cost!.scenario.droppedIndexes).toEqual(candidates)
  })
})
