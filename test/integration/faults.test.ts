import { spawn } from 'node:child_process'
import pg from 'pg'
import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import { type InsertCost, measureInsertCost } from '../../src/index.js'
import { footprint } from '../support/assertions.js'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { failure, terminateWalcostWhen, waitForNoWalcost, waitForWalcost } from '../support/faults.js'

// No autovacuum on target: rolled-back runs leave dead tuples, and a vacuum between a checkpoint and
// a batch would change the pages first and take the batch's images.
const SETUP = `create table if not exists target (id int8 primary key, at timestamptz not null, device int4 not null, v float8)
    with (autovacuum_enabled = false);
  create index if not exists target_device_idx on target (device, at);
  insert into target select i, timestamptz '2026-01-01' + i * interval '1 second', i % 100, i from generate_series(1, 20000) i on conflict do nothing;
  create table if not exists other (id bigserial primary key, note text)`

describeOnPostgres('on a busy server', () => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(SETUP)
    await test.exec('vacuum analyze target')
  })
  afterAll(() => test.close())

  /** Per relation and record type: what must not change when others write at the same time. */
  const ours = (cost: InsertCost) =>
    [cost.heap!, ...cost.indexes].map((relation) => ({
      records: relation.records,
      bytes: relation.walBytes - relation.fpiBytes,
    }))

  it('keeps our records and bytes within 1% of an idle run while other sessions write, and reports the rest as noise', async () => {
    const batch = (from: number) =>
      `insert into target select ${from} + i, timestamptz '2027-01-01' + (${from} + i) * interval '1 second', i % 100, i from generate_series(1, 20000) i`
    // Both runs start from the same table, right after a checkpoint: a rolled-back run leaves dead
    // index entries that change where the next one splits, and a checkpoint the server times by
    // itself would change which pages take images.
    const fresh = async () => {
      await test.exec(`drop table target; ${SETUP}`)
      await test.exec('vacuum analyze target')
    }
    await fresh()
    const idle = await measureInsertCost({ db: test.url!, table: 'target', sql: batch(1_000_000), checkpoint: true })
    await fresh()
    const writers = Array.from({ length: 3 }, () => new pg.Client({ connectionString: test.url }))
    let stop = false
    const started = Date.now()
    const loops = writers.map(async (client, n) => {
      await client.connect()
      // Two sessions write another table, one the same table far from our keys; each stops after 20 s at most.
      for (let i = 0; !stop && Date.now() - started < 20_000; i++) {
        await client.query(
          n < 2
            ? `insert into other (note) select repeat('x', 50) from generate_series(1, 50)`
            : `insert into target select -${n * 10_000_000} - ${i} * 100 - g, timestamptz '2020-01-01', 7, 0 from generate_series(1, 50) g`,
        )
      }
    })
    await new Promise((resolve) => setTimeout(resolve, 100))
    const busy = await measureInsertCost({ db: test.url!, table: 'target', sql: batch(1_000_000), checkpoint: true })
    stop = true
    await Promise.all(loops)
    await Promise.all(writers.map((client) => client.end()))
    expect(busy.noiseBytes).toBeGreaterThan(10_000)
    expect(busy.noiseBytes).toBeGreaterThan(100 * Math.max(1, idle.noiseBytes!))
    expect(busy.rows).toBe(idle.rows)
    expect([idle.checkpointDuringWindow, busy.checkpointDuringWindow]).toEqual([false, false])
    for (const [i, relation] of ours(busy).entries()) {
      const quiet = ours(idle)[i]!
      expect(Math.abs(relation.records - quiet.records) / quiet.records).toBeLessThan(0.01)
      // The writer on the same table shares its heap pages and its index's leaf pages with ours: which
      // pages we initialise (INSERT+INIT) and which first changes log an image (dropping the record's
      // block data) depends on who gets there first, so record bytes move a little more than records.
      expect(Math.abs(relation.bytes - quiet.bytes) / quiet.bytes).toBeLessThan(0.03)
    }
  })

  it('detects and reports a checkpoint that runs in the middle of the batch', async () => {
    const admin = new pg.Client({ connectionString: test.url })
    await admin.connect()
    try {
      const measuring = measureInsertCost({
        db: test.url!,
        table: 'target',
        sql: `insert into target select 3000000 + i, now(), i % 100, i from generate_series(1, 5000) i; select pg_sleep(1);
              insert into target select 3100000 + i, now(), i % 100, i from generate_series(1, 5000) i`,
      })
      await new Promise((resolve) => setTimeout(resolve, 400))
      await admin.query('checkpoint')
      const cost = await measuring
      expect(cost.checkpointDuringWindow).toBe(true)
      expect(cost.notes[0]).toContain('A checkpoint ran during the measurement')
      expect(cost.fpiCount!).toBeGreaterThan(0)
    } finally {
      await admin.end()
    }
    const quiet = await measureInsertCost({ db: test.url!, table: 'target', count: 1_000 })
    expect(quiet.checkpointDuringWindow).toBe(false)
    expect(quiet.notes).toEqual([])
  })

  it('says when another session changed the table inside the window, and that images may be missing', async () => {
    const other = new pg.Client({ connectionString: test.url })
    await other.connect()
    try {
      const measuring = measureInsertCost({
        db: test.url!,
        table: 'target',
        checkpoint: true,
        sql: `insert into target select 7000000 + i, now(), i % 100, i from generate_series(1, 2000) i; select pg_sleep(1);
              insert into target select 7100000 + i, now(), i % 100, i from generate_series(1, 2000) i`,
      })
      expect(await waitForWalcost(test.url!, '%pg_sleep%')).toBe(true)
      await other.query(`insert into target select -8000000 - i, now(), i % 100, i from generate_series(1, 500) i`)
      const cost = await measuring
      expect(cost.notes.find((note) => note.includes("that are not the batch's"))).toMatch(
        /changed (the table|target_device_idx|target_pkey)/,
      )
      expect(cost.noiseBytes).toBeGreaterThan(0)
    } finally {
      await other.query('delete from target where id <= -8000000')
      await other.end()
    }
  })
})

describeOnPostgres('faults on a real server leave nothing behind', () => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(SETUP)
  })
  afterAll(() => test.close())

  const slowBatch = (seconds: number) =>
    `insert into target select 5000000 + i, now(), i % 100, i from generate_series(1, 1000) i; select pg_sleep(${seconds})`

  it('statement_timeout: the error says the statement was cancelled', async () => {
    const before = await footprint(test, 'target')
    const url = `${test.url}?options=${encodeURIComponent('-c statement_timeout=300')}`
    const error = await failure(measureInsertCost({ db: url, table: 'target', sql: slowBatch(5), dropIndexes: true }))
    expect(error.code).toBe('ABORTED')
    expect(error.message).toContain('statement_timeout')
    expect(await footprint(test, 'target')).toEqual(before)
  })

  it("the caller's AbortSignal cancels a running statement at once, and a Pool stays usable", async () => {
    const before = await footprint(test, 'target')
    const pool = new pg.Pool({ connectionString: test.url, max: 1 })
    try {
      const controller = new AbortController()
      const started = Date.now()
      setTimeout(() => controller.abort(), 300)
      const error = await failure(
        measureInsertCost({
          db: pool,
          table: 'target',
          sql: slowBatch(10),
          dropIndexes: true,
          signal: controller.signal,
        }),
      )
      expect(error.code).toBe('ABORTED')
      expect(error.message).toContain('AbortSignal')
      expect(Date.now() - started).toBeLessThan(5_000)
      expect((await pool.query('select 1 as one')).rows).toEqual([{ one: 1 }])
    } finally {
      await pool.end()
    }
    expect(await footprint(test, 'target')).toEqual(before)
  })

  it("a cancel of the reading session's first statement fails the call with ABORTED, not a reading left to one session", async () => {
    const before = await footprint(test, 'target')
    const pool = new pg.Pool({ connectionString: test.url, max: 2 })
    // The Pool's second connection is the one walcost opens to read the WAL beside the batch. Its
    // first statement (the session's limits) is cancelled by the server, as pg_cancel_backend from
    // any other session would cancel it, only here at a known moment: the statement cancels its own backend.
    let connections = 0
    pool.on('connect', (client) => {
      if (++connections !== 2) return
      const send = client.query.bind(client) as (...args: unknown[]) => unknown
      ;(client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        const [text, ...rest] = args
        return typeof text === 'string' && text.includes('set_config')
          ? send(`${text}, pg_cancel_backend(pg_backend_pid())`, ...rest)
          : send(...args)
      }
    })
    try {
      const error = await failure(measureInsertCost({ db: pool, table: 'target', count: 200 }))
      expect(connections).toBe(2)
      expect(error.code).toBe('ABORTED')
      expect(error.sqlState).toBe('57014')
      expect((await pool.query('select 1 as one')).rows).toEqual([{ one: 1 }])
    } finally {
      await pool.end()
    }
    expect(await footprint(test, 'target')).toEqual(before)
  })

  it('a COPY broken by a bad row source keeps nothing and leaves the Pool usable', async () => {
    const before = await footprint(test, 'target')
    const pool = new pg.Pool({ connectionString: test.url, max: 1 })
    try {
      function* rows() {
        for (let i = 0; i < 50_000; i++) {
          if (i === 30_000) throw new Error('the source broke')
          yield { id: 6_000_000 + i, at: '2027-01-01', device: 1, v: i }
        }
      }
      const error = await failure(measureInsertCost({ db: pool, table: 'target', rows: rows(), method: 'copy' }))
      expect(error.message).toContain('the source broke')
      expect((await pool.query('select count(*)::int as n from target where id >= 6000000')).rows).toEqual([{ n: 0 }])
    } finally {
      await pool.end()
    }
    expect(await footprint(test, 'target')).toEqual(before)
  })

  it('the connection terminated mid-run: CONNECTION_FAILED, and the indexes it dropped are back', async () => {
    const before = await footprint(test, 'target')
    const measuring = failure(
      measureInsertCost({ db: test.url!, table: 'target', sql: slowBatch(5), dropIndexes: true }),
    )
    await terminateWalcostWhen(test.url!, '%pg_sleep%')
    expect((await measuring).code).toBe('CONNECTION_FAILED')
    expect(await footprint(test, 'target')).toEqual(before)
  })

  it('the Node process killed (SIGKILL) mid-run: the server rolls everything back', async () => {
    const before = await footprint(test, 'target')
    const script = `import('${new URL('../../dist/index.js', import.meta.url).pathname}').then(({ measureInsertCost }) =>
      measureInsertCost({ db: ${JSON.stringify(test.url)}, table: 'target', sql: ${JSON.stringify(slowBatch(2))}, dropIndexes: true }))`
    const child = spawn(process.execPath, ['-e', script], { stdio: 'ignore' })
    expect(await waitForWalcost(test.url!, '%pg_sleep%')).toBe(true)
    child.kill('SIGKILL')
    // The backend notices its client is gone when the sleep ends, then rolls back.
    await waitForNoWalcost(test.url!)
    expect(await footprint(test, 'target')).toEqual(before)
  })
})
