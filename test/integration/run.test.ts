import { PGlite } from '@electric-sql/pglite'
import { drizzle as drizzleNodePostgres } from 'drizzle-orm/node-postgres'
import { bigint, integer, numeric, pgTable, text, timestamp } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import { Kysely, PostgresDialect } from 'kysely'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import {
  compareScenarios,
  type InsertCost,
  type MeasureOptions,
  measureInsertCost,
  WalcostError,
} from '../../src/index.js'
import { backends, describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'

// The app's own write path, run by walcost inside its measuring transaction: the same 1,000-row
// insert written four ways must cost the same, and whatever the code does, nothing persists.

const SETUP = `create table orders (id int8 primary key, customer_id int4 not null, placed_at timestamptz not null,
                                  total numeric(10, 2) not null, note text);
create index orders_customer_idx on orders (customer_id, placed_at);
insert into orders select i, i % 500, timestamptz '2026-01-01' + i * interval '1 minute', i % 300, 'seed'
  from generate_series(1, 5000) i;`

type Order = {
  id: number
  customer_id: number
  placed_at: string
  total: string
  note: string | null
}

const orders: Order[] = Array.from({ length: 1_000 }, (_, i) => ({
  id: 100_001 + i,
  customer_id: (i * 7) % 500,
  placed_at: new Date(Date.UTC(2026, 5, 1) + i * 1000).toISOString(),
  total: `${(i % 300) + 0.5}`,
  note: i % 3 === 0 ? null : `order ${i}`,
}))

/** The app's repository function over a plain pg-style client (PGlite's query is the same shape). */
interface Queryable {
  query(text: string, values?: unknown[]): Promise<unknown>
}
async function insertOrders(client: Queryable, rows: Order[]): Promise<void> {
  for (const row of rows) {
    await client.query('insert into orders (id, customer_id, placed_at, total, note) values ($1, $2, $3, $4, $5)', [
      row.id,
      row.customer_id,
      row.placed_at,
      row.total,
      row.note,
    ])
  }
}

const ordersTable = pgTable('orders', {
  id: bigint('id', { mode: 'number' }).primaryKey(),
  customer_id: integer('customer_id').notNull(),
  placed_at: timestamp('placed_at', { withTimezone: true, mode: 'string' }).notNull(),
  total: numeric('total', { precision: 10, scale: 2 }).notNull(),
  note: text('note'),
})

interface OrdersDatabase {
  orders: Order
}

/** Kysely on the connection walcost lends: a pool of that one connection, whose release() walcost ignores. */
function kyselyOn(db: unknown): Kysely<OrdersDatabase> {
  const pool = { connect: async () => db, end: async () => undefined }
  return new Kysely<OrdersDatabase>({ dialect: new PostgresDialect({ pool: pool as never }) })
}

function drizzleOn(db: unknown) {
  return db instanceof PGlite ? drizzlePglite(db) : drizzleNodePostgres(db as pg.Client)
}

const within = (actual: number | null, expected: number | null, share: number) => {
  expect(actual).not.toBeNull()
  expect(Math.abs((actual as number) - (expected as number))).toBeLessThanOrEqual(Math.abs(expected as number) * share)
}

describe.each(backends)('a run batch on $name', (backend) => {
  let test: TestDatabase
  const count = async () => Number((await test.query<{ n: string }>('select count(*)::text as n from orders'))[0]?.n)
  beforeAll(async () => {
    test = await backend.open()
    await test.exec(SETUP)
  })
  afterAll(() => test.close())

  /** Work on the same starting state as every other call: a database of its own, built by the same statements. */
  const fromSameState = async <T>(work: (fresh: TestDatabase) => Promise<T>): Promise<T> => {
    const fresh = await backend.open()
    try {
      await fresh.exec(SETUP)
      return await work(fresh)
    } finally {
      await fresh.close()
    }
  }

  const failure = async (options: Partial<MeasureOptions>): Promise<WalcostError> => {
    try {
      await measureInsertCost({ db: test.db, table: 'orders', ...options } as MeasureOptions)
    } catch (error) {
      expect(error).toBeInstanceOf(WalcostError)
      return error as WalcostError
    }
    throw new Error('the measurement did not fail')
  }

  it('costs the same as rows when the app writes them itself: pg, Drizzle, Drizzle in a transaction, Kysely', async () => {
    const measure = (batch: Partial<MeasureOptions>): Promise<InsertCost> =>
      fromSameState(async (fresh) => {
        const cost = await measureInsertCost({ db: fresh.db, table: 'orders', checkpoint: true, ...batch })
        const [{ n } = { n: '' }] = await fresh.query<{ n: string }>('select count(*)::text as n from orders')
        expect(Number(n)).toBe(5_000)
        return cost
      })
    const asRows = await measure({ rows: orders })
    const ways = {
      pg: await measure({ run: (db) => insertOrders(db as Queryable, orders) }),
      drizzle: await measure({
        run: async (db) => {
          const app = drizzleOn(db)
          for (const row of orders) await app.insert(ordersTable).values(row)
        },
      }),
      'drizzle transaction': await measure({
        run: (db) =>
          drizzleOn(db).transaction(async (tx) => {
            for (const row of orders) await tx.insert(ordersTable).values(row)
          }),
      }),
      kysely: await measure({
        run: async (db) => {
          const app = kyselyOn(db)
          for (const row of orders) await app.insertInto('orders').values(row).execute()
          await app.destroy()
        },
      }),
    }
    expect(asRows.rows).toBe(1_000)
    expect(asRows.attribution).toBe('wal')
    for (const [way, cost] of Object.entries(ways)) {
      expect({ way, rows: cost.rows, batch: cost.scenario.batch }).toEqual({ way, rows: 1_000, batch: 'run' })
      within(cost.bytesPerRow, asRows.bytesPerRow, 0.005)
      within(cost.walRecords, asRows.walRecords, 0.005)
      expect(cost.indexes.map((index) => index.name)).toEqual(asRows.indexes.map((index) => index.name))
      for (const index of asRows.indexes) {
        within(cost.indexes.find((other) => other.name === index.name)?.walBytes ?? null, index.walBytes, 0.005)
      }
    }
  })

  it('reports a throw inside run as BATCH_FAILED with the error as its cause, and keeps nothing', async () => {
    const thrown = new Error('the repository failed')
    const error = await failure({
      run: async (db) => {
        await insertOrders(db as Queryable, orders.slice(0, 10))
        throw thrown
      },
    })
    expect(error.code).toBe('BATCH_FAILED')
    expect(error.cause).toBe(thrown)
    expect(await count()).toBe(5_000)
  })

  it("refuses a COMMIT or ROLLBACK of walcost's transaction, before it is sent", async () => {
    for (const statement of ['commit', 'ROLLBACK', 'end transaction']) {
      const error = await failure({
        run: async (db) => {
          await insertOrders(db as Queryable, orders.slice(0, 10))
          await (db as Queryable).query(statement)
          await insertOrders(db as Queryable, orders.slice(10, 20))
        },
      })
      expect(error.code).toBe('BATCH_ENDED_TRANSACTION')
      expect(error.message).toContain('run callback')
      expect(await count()).toBe(5_000)
    }
  })

  it('fails a COMMIT it could not see (inside a multi-statement string) and refuses every write after it', async () => {
    const error = await failure({
      run: async (db) => {
        const first = orders[0] as Order
        const values = (row: Order) => `(${row.id}, ${row.customer_id}, '${row.placed_at}', ${row.total}, null)`
        const script = `insert into orders values ${values(first)}; commit; insert into orders values ${values(orders[1] as Order)}`
        await ((db as { exec?: (sql: string) => Promise<unknown> }).exec?.(script) ?? (db as Queryable).query(script))
      },
    })
    expect(error.code).toBe('BATCH_ENDED_TRANSACTION')
    // What came before the COMMIT was committed by it, as the docs say; nothing after it was.
    expect(await count()).toBe(5_001)
    await test.exec(`delete from orders where id = ${orders[0]?.id}`)
    const [setting] = await test.query<{ readOnly: string }>(
      `select current_setting('default_transaction_read_only') as "readOnly"`,
    )
    expect(setting?.readOnly).toBe('off')
  })

  it('never commits a query the code did not await: the measurement fails, and the handle refuses it once run has settled', async () => {
    const late: Promise<unknown>[] = []
    const measuring = measureInsertCost({
      db: test.db,
      table: 'orders',
      run: async (db) => {
        await insertOrders(db as Queryable, orders.slice(0, 1))
        // Sent before run settles and still running when it does: BATCH_NOT_AWAITED. It runs
        // inside the transaction, and is rolled back with it.
        late.push(insertOrders(db as Queryable, orders.slice(1, 2)))
        // A pool adapter's late release(), as Kysely's after a query it was not awaited for: harmless.
        setTimeout(() => (db as { release(): void }).release(), 100)
        // Sent after: refused.
        late.push(
          new Promise((resolve) => setTimeout(resolve, 200)).then(() =>
            insertOrders(db as Queryable, orders.slice(2, 3)),
          ),
        )
      },
    })
    await expect(measuring).rejects.toMatchObject({ code: 'BATCH_NOT_AWAITED' })
    const outcome = await Promise.allSettled(late)
    expect(outcome[1]?.status).toBe('rejected')
    expect(((outcome[1] as PromiseRejectedResult).reason as WalcostError).message).toContain(
      'after the callback had settled',
    )
    await new Promise((resolve) => setTimeout(resolve, 2_000))
    expect(await count()).toBe(5_000)
  })

  it('gives compareScenarios the same decomposition as the equivalent sql, within the A/A resolution', async () => {
    const batch = orders.slice(0, 300)
    const sql = batch
      .map(
        (row) =>
          `insert into orders (id, customer_id, placed_at, total, note) values (${row.id}, ${row.customer_id}, '${row.placed_at}', ${row.total}, ${row.note === null ? 'null' : `'${row.note}'`});`,
      )
      .join('\n')
    const compared = (batch: { sql: string } | { run: (db: unknown) => Promise<void> }) =>
      fromSameState((fresh) =>
        compareScenarios({
          db: fresh.db,
          table: 'orders',
          ...batch,
          // Text and the app's code name the real table: on a real server they measure it only when told to.
          ...(backend.name === 'pglite' ? {} : { runsOn: 'table' as const }),
        }),
      )
    const bySql = await compared({ sql })
    const byRun = await compared({ run: (db) => insertOrders(db as Queryable, batch) })
    expect(byRun.startingState).toBe(bySql.startingState)
    const resolution = Math.max(bySql.aa.bytesPerRow, byRun.aa.bytesPerRow) + 0.005 * bySql.decomposition.bytesPerRow
    expect(byRun.decomposition.parts.map((part) => part.name)).toEqual(
      bySql.decomposition.parts.map((part) => part.name),
    )
    for (const part of bySql.decomposition.parts) {
      const same = byRun.decomposition.parts.find((other) => other.name === part.name)
      expect(Math.abs((same?.bytesPerRow ?? Number.NaN) - part.bytesPerRow!)).toBeLessThanOrEqual(resolution)
    }
  })
})

describeOnPostgres('a run batch on a Pool', () => {
  let test: TestDatabase
  let pool: pg.Pool
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(SETUP)
    pool = new pg.Pool({ connectionString: test.url, max: 3 })
  })
  afterAll(async () => {
    // pool.end() resolves before its clients have left: dropping the database under them would
    // terminate them with an error nobody listens to.
    await pool.end()
    for (let wait = 0; wait < 100; wait++) {
      const [{ others } = { others: 0 }] = await test.query<{ others: number }>(
        'select count(*)::int as others from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()',
      )
      if (others === 0) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    await test.close()
  })

  it('runs the code on a pooled client, which goes back to the pool clean', async () => {
    const settings = `select current_setting('default_transaction_read_only') as read_only,
                             current_setting('lock_timeout') as lock_timeout, pg_backend_pid() as pid`
    const before = (await pool.query(settings)).rows[0]
    let lent: unknown
    const cost = await measureInsertCost({
      db: pool,
      table: 'orders',
      run: async (db) => {
        lent = db
        // A pool-shaped adapter releases the client when done: walcost keeps it until the rollback.
        await kyselyOn(db).insertInto('orders').values(orders.slice(0, 100)).execute()
        ;(db as pg.PoolClient).release()
      },
    })
    expect(lent).toBeInstanceOf(pg.Client)
    expect(cost.rows).toBe(100)
    expect(cost.indexes.map((index) => index.name).sort()).toEqual(['orders_customer_idx', 'orders_pkey'])
    expect(pool.totalCount).toBeLessThanOrEqual(3)
    expect(pool.waitingCount).toBe(0)
    const after = (await pool.query(settings)).rows[0]
    expect({ readOnly: after.read_only, lockTimeout: after.lock_timeout }).toEqual({
      readOnly: before.read_only,
      lockTimeout: before.lock_timeout,
    })
    const [{ n } = { n: '' }] = await test.query<{ n: string }>('select count(*)::text as n from orders')
    expect(Number(n)).toBe(5_000)
  })
})

describe('measurements on the embedded default', () => {
  it('start from one copy of the database after setup: the same records, images and bytes every time', async () => {
    const measure = () =>
      measureInsertCost({
        setup: SETUP,
        table: 'orders',
        run: (db) => insertOrders(db as Queryable, orders.slice(0, 500)),
      })
    const costs = [await measure(), await measure(), await measure(), await measure()]
    const [first] = costs
    expect(first!.rows).toBe(500)
    for (const cost of costs) {
      expect([cost.walRecords, cost.fpiCount, cost.walBytes]).toEqual([
        first!.walRecords,
        first!.fpiCount,
        first!.walBytes,
      ])
    }
  })
})

describe('a failed run batch on the embedded default', () => {
  const setup = SETUP.split(';\ninsert')[0] as string

  it("names drizzle-orm/pglite when drizzle-orm/node-postgres is handed the PGlite instance, without the statement's values", async () => {
    const error = await measureInsertCost({
      setup,
      table: 'orders',
      // As an app test written for a server runs on the embedded default.
      run: (db) =>
        drizzleNodePostgres(db as never)
          .insert(ordersTable)
          .values(orders),
    }).catch((failed: unknown) => failed as WalcostError)
    expect(error).toBeInstanceOf(WalcostError)
    expect((error as WalcostError).code).toBe('BATCH_FAILED')
    const { message } = error as WalcostError
    expect(message).toContain('drizzle-orm/pglite')
    // The innermost cause first, then the failed query it happened in, cut, with no parameters.
    expect(message).toMatch(
      /\(The "src" argument must be of type string\. Received an instance of Object \(in: Failed query: insert into "orders"/,
    )
    expect(message).toMatch(/\.\.\. \([\d]+ more characters\)/)
    expect(message).not.toContain('params:')
    expect(message).not.toContain(orders[0]?.placed_at as string)
    expect(message.length).toBeLessThan(1_500)
  })

  it('quotes a failed query of a thousand rows once, capped, with its SQLSTATE from the inner cause', async () => {
    const duplicate = [...orders, orders[0] as Order]
    const error = await measureInsertCost({
      setup,
      table: 'orders',
      run: (db) => drizzlePglite(db).insert(ordersTable).values(duplicate),
    }).catch((failed: unknown) => failed as WalcostError)
    expect((error as WalcostError).code).toBe('BATCH_FAILED')
    expect((error as WalcostError).sqlState).toBe('23505')
    const { message } = error as WalcostError
    expect(message).toMatch(
      /^running the batch .*: duplicate key value violates unique constraint "orders_pkey" \(in: Failed query: insert into "orders"/,
    )
    expect(message.match(/insert into "orders"/g)).toHaveLength(1)
    expect(message).not.toContain('params:')
    expect(message.length).toBeLessThan(1_000)
  })
})
