import { createServer, type Server, type Socket } from 'node:net'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { openPoolSession } from '../../src/driver/pg.js'
import { compareRemedies, compareScenarios, measureInsertCost } from '../../src/index.js'
import { footprint } from '../support/assertions.js'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { failure, terminateWalcostWhen, walcostPids } from '../support/faults.js'

const SETUP = `create table if not exists orders (id int8 primary key, at timestamptz not null, customer int4 not null);
  create index if not exists orders_customer_idx on orders (customer, at);
  insert into orders select i, timestamptz '2026-01-01' + i * interval '1 second', i % 300 from generate_series(1, 5000) i
  on conflict do nothing`

/** Errors nobody listened for, which would take a caller's process down outside a test runner. */
function collectUncaught(): { errors: unknown[]; stop: () => void } {
  const errors: unknown[] = []
  const record = (error: unknown) => errors.push(error)
  process.on('uncaughtException', record)
  process.on('unhandledRejection', record)
  return {
    errors,
    stop: () => {
      process.off('uncaughtException', record)
      process.off('unhandledRejection', record)
    },
  }
}

describeOnPostgres('faults never crash the caller, and every wait is bounded', () => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(SETUP)
  })
  afterAll(() => test.close())

  it("a Pool's client terminated mid-call: the call fails with CONNECTION_FAILED, the process lives, the pool serves on", async () => {
    const before = await footprint(test, 'orders')
    const pool = new pg.Pool({ connectionString: test.url, max: 2, application_name: 'walcost' })
    const uncaught = collectUncaught()
    try {
      const running = failure(
        compareScenarios({
          db: pool,
          table: 'orders',
          perIndex: false,
          runsOn: 'table',
          sql: `insert into orders select 100000 + i, now(), i % 300 from generate_series(1, 200) i; select pg_sleep(3)`,
        }),
      )
      await terminateWalcostWhen(test.url!, '%pg_sleep%')
      expect((await running).code).toBe('CONNECTION_FAILED')
      // The broken client was destroyed, not returned: the pool's next queries run.
      expect((await pool.query('select 1 as one')).rows).toEqual([{ one: 1 }])
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(uncaught.errors).toEqual([])
    } finally {
      uncaught.stop()
      await pool.end()
    }
    expect(await footprint(test, 'orders')).toEqual(before)
  })

  it("on a Pool, both sessions go back to it warm: the next call reuses them, with no slot left and the pool's settings", async () => {
    const before = await footprint(test, 'orders')
    const pool = new pg.Pool({ connectionString: test.url, max: 3, application_name: 'walcost' })
    try {
      const sql = (from: number) =>
        `insert into orders select ${from} + i, now(), i % 300 from generate_series(1, 200) i`
      expect((await measureInsertCost({ db: pool, table: 'orders', sql: sql(500_000) })).attribution).toBe('wal')
      expect([pool.totalCount, pool.idleCount]).toEqual([2, 2])
      const first = await walcostPids(test.url!)
      expect(first).toHaveLength(2)
      expect((await measureInsertCost({ db: pool, table: 'orders', sql: sql(600_000) })).attribution).toBe('wal')
      expect(await walcostPids(test.url!)).toEqual(first)
      const settings = await Promise.all([0, 1].map(() => pool.connect())).then(async (clients) => {
        const rows = await Promise.all(
          clients.map(async (client) => (await client.query(`select current_setting('lock_timeout') as lock`)).rows[0]),
        )
        for (const client of clients) client.release()
        return rows
      })
      expect(settings).toEqual([{ lock: '0' }, { lock: '0' }])
    } finally {
      await pool.end()
    }
    expect(await footprint(test, 'orders')).toEqual(before)
  })

  it('a pooled connection whose COPY was left before its end is destroyed, not returned', async () => {
    const pool = new pg.Pool({ connectionString: test.url, max: 1 })
    try {
      const session = await openPoolSession(pool, {
        connectTimeoutMs: 10_000,
        lockTimeoutMs: 10_000,
        statementTimeoutMs: undefined,
      })
      for await (const _chunk of session.copyOut!(
        `copy (select repeat('x', 100000)::bytea from generate_series(1, 100)) to stdout (format binary)`,
      ))
        break
      await session.close()
      expect(pool.totalCount).toBe(0)
      expect((await pool.query('select 1 as one')).rows).toEqual([{ one: 1 }])
    } finally {
      await pool.end()
    }
  })

  it("a caller's Client terminated mid-call: CONNECTION_FAILED, and its own error listeners are as they were", async () => {
    const client = new pg.Client({ connectionString: test.url, application_name: 'walcost' })
    await client.connect()
    const seen: Error[] = []
    client.on('error', (error) => seen.push(error))
    const listeners = client.listeners('error')
    const running = failure(
      measureInsertCost({
        db: client,
        table: 'orders',
        sql: `insert into orders select 200000 + i, now(), i % 300 from generate_series(1, 200) i; select pg_sleep(3)`,
      }),
    )
    await terminateWalcostWhen(test.url!, '%pg_sleep%')
    expect((await running).code).toBe('CONNECTION_FAILED')
    expect(client.listeners('error')).toEqual(listeners)
    await client.end().catch(() => undefined)
  })

  it('the second session that reads the WAL terminated mid-batch: the measurement reads it afterwards instead', async () => {
    const before = await footprint(test, 'orders')
    const uncaught = collectUncaught()
    try {
      const running = measureInsertCost({
        db: test.url!,
        table: 'orders',
        sql: `insert into orders select 400000 + i, now(), i % 300 from generate_series(1, 200) i; select pg_sleep(2)`,
      })
      // Only the reading session looks at the written position alone, between its reads.
      await terminateWalcostWhen(test.url!, 'select (pg_current_wal_lsn() - %')
      const cost = await running
      expect(cost.attribution).toBe('wal')
      expect(cost.rows).toBe(200)
      expect(cost.logicalBytes).toBe(200 * (8 + 8 + 4))
      for (const index of cost.indexes) expect(index.records).toBeGreaterThanOrEqual(200)
      await new Promise((resolve) => setTimeout(resolve, 200))
      expect(uncaught.errors).toEqual([])
    } finally {
      uncaught.stop()
    }
    expect(await footprint(test, 'orders')).toEqual(before)
  })

  it('a fault in a wal_compression run fails compareRemedies instead of passing for an unavailable remedy', async () => {
    const before = await footprint(test, 'orders')
    // Only the compressed run sleeps, so the termination lands in it.
    const sql = `insert into orders select 300000 + i, now(), i % 300 from generate_series(1, 200) i;
      select pg_sleep(case when current_setting('wal_compression') = 'pglz' then 3 else 0 end)`
    const running = failure(
      compareRemedies({ db: test.url!, table: 'orders', sql, runsOn: 'table', compression: ['pglz'] }),
    )
    await terminateWalcostWhen(test.url!, '%pg_sleep%', true)
    expect((await running).code).toBe('CONNECTION_FAILED')
    expect(await footprint(test, 'orders')).toEqual(before)
  })

  it('a lock held by another session ends the call with LOCK_TIMEOUT within lockTimeoutMs, catalog reads included', async () => {
    const holder = new pg.Client({ connectionString: test.url })
    await holder.connect()
    try {
      await holder.query('begin; lock table orders in access exclusive mode')
      const started = Date.now()
      const error = await failure(
        measureInsertCost({ db: test.url!, table: 'orders', count: 100, lockTimeoutMs: 1_000 }),
      )
      expect(error.code).toBe('LOCK_TIMEOUT')
      expect(error.message).toContain('lockTimeoutMs')
      // The lock is held for as long as the test runs: only the bound can have ended the call.
      expect(Date.now() - started).toBeLessThan(1_000 + 15_000)
    } finally {
      await holder.query('rollback')
      await holder.end()
    }
  })

  it("statementTimeoutMs bounds the batch, and a caller's Client gets its own settings back", async () => {
    const client = new pg.Client({ connectionString: test.url })
    await client.connect()
    try {
      await client.query(`set lock_timeout = '42s'`)
      const error = await failure(
        measureInsertCost({
          db: client,
          table: 'orders',
          statementTimeoutMs: 300,
          sql: `insert into orders select 400000 + i, now(), i % 300 from generate_series(1, 10) i; select pg_sleep(5)`,
        }),
      )
      expect(error.code).toBe('ABORTED')
      expect(error.message).toContain('statementTimeoutMs')
      const cost = await measureInsertCost({ db: client, table: 'orders', count: 10 })
      expect(cost.rows).toBe(10)
      const { rows } = await client.query<{ lock: string; statement: string }>(
        `select current_setting('lock_timeout') as lock, current_setting('statement_timeout') as statement`,
      )
      expect(rows).toEqual([{ lock: '42s', statement: '0' }])
    } finally {
      await client.end()
    }
  })
})

describe('a server that accepts the connection and never answers', () => {
  let server: Server
  let port: number
  const sockets: Socket[] = []
  beforeAll(async () => {
    server = createServer((socket) => sockets.push(socket))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
  })
  afterAll(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => server.close(resolve))
  })

  const url = (query = '') => `postgres://nobody@127.0.0.1:${port}/nothing${query}`

  it('gives up after connectTimeoutMs with CONNECTION_FAILED naming the host and the bound', async () => {
    const error = await failure(measureInsertCost({ db: url(), table: 't', count: 1, connectTimeoutMs: 500 }))
    expect(error.code).toBe('CONNECTION_FAILED')
    expect(error.message).toContain(`127.0.0.1:${port}`)
    expect(error.message).toContain('within 0.5 s')
  })

  it('honours connect_timeout in the URL over connectTimeoutMs', async () => {
    const error = await failure(
      measureInsertCost({ db: url('?connect_timeout=1'), table: 't', count: 1, connectTimeoutMs: 600_000 }),
    )
    expect(error.code).toBe('CONNECTION_FAILED')
    expect(error.message).toContain('within 1 s')
  })

  it('honours PGCONNECT_TIMEOUT', async () => {
    process.env.PGCONNECT_TIMEOUT = '1'
    try {
      const error = await failure(measureInsertCost({ db: url(), table: 't', count: 1, connectTimeoutMs: 600_000 }))
      expect(error.message).toContain('within 1 s')
    } finally {
      delete process.env.PGCONNECT_TIMEOUT
    }
  })

  it('bounds a Pool that would wait for a connection without end', async () => {
    const pool = new pg.Pool({ connectionString: url() })
    pool.on('error', () => undefined)
    try {
      const error = await failure(measureInsertCost({ db: pool, table: 't', count: 1, connectTimeoutMs: 500 }))
      expect(error.code).toBe('CONNECTION_FAILED')
      expect(error.message).toContain('within 0.5 s')
    } finally {
      for (const socket of sockets) socket.destroy()
      await pool.end().catch(() => undefined)
    }
  })
})
