import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { PGlite } from '@electric-sql/pglite'
import { drizzle as drizzleNodePostgres } from 'drizzle-orm/node-postgres'
import { bigint, integer, pgTable } from 'drizzle-orm/pg-core'
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import '../../src/testing/vitest.js'
import { type MeasureOptions, measureInsertCost, WalcostError } from '../../src/index.js'
import { backends, describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'

// A batch after which walcost's transaction wrote no row of the table is an error, never a result
// of 0 rows: the app's code left a query builder unawaited, or wrote through a connection of its
// own. On a real server what that connection committed is named, and it stays. A batch whose code
// was still running when run settled is an error too, never a result of the rows it had got to.

const SETUP = `create table orders (id int8 primary key, customer_id int4 not null);
create index orders_customer_idx on orders (customer_id);`
const ordersTable = pgTable('orders', {
  id: bigint('id', { mode: 'number' }).primaryKey(),
  customer_id: integer('customer_id').notNull(),
})
const orders = Array.from({ length: 100 }, (_, i) => ({ id: 1_000 + i, customer_id: i % 7 }))

interface Queryable {
  query(text: string, values?: unknown[]): Promise<unknown>
}
/** The app's repository function: its own transaction, one insert a row. */
async function insertOrders(client: Queryable, rows: typeof orders): Promise<void> {
  await client.query('begin')
  for (const row of rows) await client.query('insert into orders values ($1, $2)', [row.id, row.customer_id])
  await client.query('commit')
}

/** The same without a transaction of its own: one INSERT a row, each committed with the caller's. */
async function insertEach(client: Queryable, rows: typeof orders): Promise<void> {
  for (const row of rows) await client.query('insert into orders values ($1, $2)', [row.id, row.customer_id])
}

const root = new URL('../..', import.meta.url).pathname
const cli = `${root}dist/cli.js`
const run = promisify(execFile)

/** The measurement's error: it must fail, with a WalcostError. */
async function failure(measuring: Promise<unknown>): Promise<WalcostError> {
  try {
    await measuring
  } catch (error) {
    expect(error).toBeInstanceOf(WalcostError)
    return error as WalcostError
  }
  throw new Error('the measurement did not fail')
}

/** `walcost check` over a config of one `run` measurement, in a project folder of its own. */
async function check(module: string, entry: Record<string, unknown>, args: string[] = []) {
  const project = await mkdtemp(join(tmpdir(), 'walcost-empty-'))
  try {
    await writeFile(join(project, 'batch.mjs'), module)
    await writeFile(
      join(project, 'walcost.config.json'),
      JSON.stringify({ measurements: [{ name: 'orders', table: 'orders', run: './batch.mjs', ...entry }] }),
    )
    return await run(process.execPath, [cli, 'check', ...args], {
      cwd: project,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
    }).then(
      ({ stdout, stderr }) => ({ code: 0, output: stdout + stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({
        code: error.code,
        output: error.stdout + error.stderr,
      }),
    )
  } finally {
    await rm(project, { recursive: true, force: true })
  }
}

const WROTE_NOTHING_CAUSES = ['a query not awaited', 'a query builder neither awaited nor returned', 'opened itself']

describe.each(backends)('an empty run batch on $name', (backend) => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await backend.open()
    await test.exec(SETUP)
  })
  afterAll(() => test.close())
  const measure = (options: Partial<MeasureOptions>) =>
    measureInsertCost({ db: test.db, table: 'orders', ...options } as MeasureOptions)
  const drizzleOn = (db: unknown) =>
    db instanceof PGlite ? drizzlePglite(db) : drizzleNodePostgres(db as pg.PoolClient)

  it('fails with BATCH_NOT_AWAITED when run does not await the repository function', async () => {
    let pending: Promise<unknown> | undefined
    const error = await failure(
      measure({
        run: (db) => {
          // Held here only so that the test can see how it ended.
          pending = insertOrders(db as Queryable, orders).catch((late: unknown) => late)
        },
      }),
    )
    expect(error.code).toBe('BATCH_NOT_AWAITED')
    expect(error.message).toContain('1 query it had sent through the connection it was handed was still running')
    expect(error.message).toContain('Return the promise from run')
    // The inserts after its BEGIN came once run had settled: refused, never run.
    expect(((await pending) as Error).message).toContain('after the callback had settled')
    expect(await test.query('select count(*)::int as n from orders')).toEqual([{ n: 0 }])
  })

  it('fails with BATCH_NOT_AWAITED, not a one-row result, when an un-awaited function inserts a row a statement', async () => {
    // As the issue found it: the first INSERT reached the connection before walcost's closing
    // snapshot, the rest after it, and a result said 1 row.
    const error = await failure(
      measure({
        run: (db) => {
          insertEach(db as Queryable, orders.slice(0, 50)).catch(() => {})
        },
      }),
    )
    expect(error.code).toBe('BATCH_NOT_AWAITED')
    expect(await test.query('select count(*)::int as n from orders')).toEqual([{ n: 0 }])
  })

  it('fails with BATCH_NOT_AWAITED when a Drizzle query is started and not awaited', async () => {
    const error = await failure(
      measure({
        run: (db) => {
          drizzleOn(db)
            .insert(ordersTable)
            .values(orders)
            .execute()
            .catch(() => {})
        },
      }),
    )
    expect(error.code).toBe('BATCH_NOT_AWAITED')
    // The started query ran inside walcost's transaction, and was rolled back with it.
    expect(await test.query('select count(*)::int as n from orders')).toEqual([{ n: 0 }])
  })

  it('fails with BATCH_WROTE_NOTHING when the un-awaited code had sent nothing yet as run settled', async () => {
    const error = await failure(
      measure({
        run: (db) => {
          // Its first query waits for something else first: nothing is running when run settles.
          setTimeout(() => insertOrders(db as Queryable, orders).catch(() => {}), 0)
        },
      }),
    )
    expect(error.code).toBe('BATCH_WROTE_NOTHING')
    for (const cause of WROTE_NOTHING_CAUSES) expect(error.message).toContain(cause)
    expect(error.message).toContain('"public"."orders"')
  })

  it('fails with BATCH_WROTE_NOTHING when a Drizzle query is neither awaited nor returned', async () => {
    const error = await failure(
      measure({
        run: (db) => {
          drizzleOn(db).insert(ordersTable).values(orders)
        },
      }),
    )
    expect(error.code).toBe('BATCH_WROTE_NOTHING')
    expect(error.message).toContain("Drizzle's db.insert(...).values(...)")
  })

  it('fails through the vitest matcher with the same errors', async () => {
    const neverStarted = measure({
      run: (db) => {
        drizzleOn(db).insert(ordersTable).values(orders)
      },
    })
    await expect(expect(neverStarted).toStayWithinWalBudget({ bytesPerRow: 400 })).rejects.toMatchObject({
      code: 'BATCH_WROTE_NOTHING',
    })
    const notAwaited = measure({
      run: (db) => {
        insertEach(db as Queryable, orders).catch(() => {})
      },
    })
    await expect(expect(notAwaited).toStayWithinWalBudget({ bytesPerRow: 400 })).rejects.toMatchObject({
      code: 'BATCH_NOT_AWAITED',
    })
  })

  it('still measures a batch that writes: the same Drizzle query, returned', async () => {
    const cost = await measure({ run: (db) => drizzleOn(db).insert(ordersTable).values(orders) })
    expect(cost.rows).toBe(100)
  })
})

describe('an empty run batch on the embedded default', () => {
  it('names the code opening a connection of its own where there is no server, and the handle to use', async () => {
    const error = await failure(
      measureInsertCost({
        setup: SETUP,
        table: 'orders',
        run: async () => {
          const own = new pg.Client({ connectionString: 'postgres://app@127.0.0.1:1/app' })
          await own.connect()
          await insertOrders(own, orders)
        },
      }),
    )
    expect(error.code).toBe('BATCH_FAILED')
    expect(error.message).toMatch(/^the run callback opened a connection of its own, and it failed \(.*ECONNREFUSED/)
    expect(error.message).toContain('embedded PGlite (db was not given)')
    expect(error.message).toContain('Write through the connection run is handed, the PGlite instance')
    expect(error.message).not.toContain('Check that the server is up')
  })

  it('fails walcost check with BATCH_NOT_AWAITED for a repository function not awaited', async () => {
    const module = `export default (db) => {
  ;(async () => {
    for (let id = 1; id <= 50; id++) await db.query('insert into orders values ($1)', [id])
  })().catch(() => {})
}
`
    const result = await check(module, { setup: 'create table orders (id int8 primary key)' })
    expect(result.code).toBe(2)
    expect(result.output).toContain('BATCH_NOT_AWAITED')
    expect(result.output).toContain('Return the promise from run')
  })

  it('fails walcost check with BATCH_WROTE_NOTHING for a Drizzle query neither awaited nor returned', async () => {
    const module = `import { drizzle } from '${root}node_modules/drizzle-orm/pglite/index.js'
import { bigint, pgTable } from '${root}node_modules/drizzle-orm/pg-core/index.js'
const orders = pgTable('orders', { id: bigint('id', { mode: 'number' }).primaryKey() })
export default (db) => {
  drizzle(db).insert(orders).values({ id: 1 })
}
`
    const result = await check(module, { setup: 'create table orders (id int8 primary key)' })
    expect(result.code).toBe(2)
    expect(result.output).toContain('BATCH_WROTE_NOTHING')
    expect(result.output).toContain('a query builder neither awaited nor returned')
  })
})

describeOnPostgres('writes through a connection of its own, on PostgreSQL', () => {
  let test: TestDatabase
  const count = async () => Number((await test.query<{ n: string }>('select count(*)::text as n from orders'))[0]?.n)
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(SETUP)
  })
  afterAll(() => test.close())

  /** The app's code as it should not be: a client of its own, committing each insert. */
  const ownClient = async (rows: typeof orders) => {
    const own = new pg.Client({ connectionString: test.url })
    await own.connect()
    try {
      await insertOrders(own, rows)
    } finally {
      await own.end()
    }
  }

  it('fails with BATCH_ESCAPED_TRANSACTION naming what was committed, which stays in the table', async () => {
    const error = await failure(measureInsertCost({ db: test.url, table: 'orders', run: () => ownClient(orders) }))
    expect(error.code).toBe('BATCH_ESCAPED_TRANSACTION')
    const [, records, bytes] = /committed ([\d,]+) WAL records \(([\d,]+) bytes\)/.exec(error.message) ?? []
    // A heap record and one a index for each row, at least.
    expect(Number(records?.replaceAll(',', ''))).toBeGreaterThanOrEqual(300)
    expect(Number(bytes?.replaceAll(',', ''))).toBeGreaterThan(300 * 60)
    expect(error.message).toContain('the code wrote through a connection of its own')
    expect(error.message).toContain('NOT rolled back')
    expect(await count()).toBe(100)
    await test.exec('delete from orders')
  })

  it("adds a note where walcost's connection wrote rows too, measuring only those", async () => {
    const cost = await measureInsertCost({
      db: test.url,
      table: 'orders',
      run: async (db) => {
        await insertOrders(db, orders.slice(0, 10))
        await ownClient(orders.slice(10))
      },
    })
    expect(cost.rows).toBe(10)
    const note = cost.notes.find((text) => text.includes('NOT rolled back'))
    expect(note).toMatch(/^While the run callback ran, other transactions committed [\d,]+ WAL records/)
    expect(await count()).toBe(90)
    await test.exec('delete from orders')
  })

  it('fails walcost check with BATCH_NOT_AWAITED for a Drizzle query not awaited, and keeps nothing', async () => {
    const module = `import { drizzle } from '${root}node_modules/drizzle-orm/node-postgres/index.js'
import { bigint, integer, pgTable } from '${root}node_modules/drizzle-orm/pg-core/index.js'
const orders = pgTable('orders', { id: bigint('id', { mode: 'number' }).primaryKey(), customer_id: integer('customer_id').notNull() })
export default (db) => {
  drizzle(db).insert(orders).values([{ id: 1, customer_id: 1 }, { id: 2, customer_id: 2 }]).execute().catch(() => {})
}
`
    const result = await check(module, {}, ['--url', test.url as string])
    expect(result.code).toBe(2)
    expect(result.output).toContain('BATCH_NOT_AWAITED')
    expect(await count()).toBe(0)
  })

  it('fails walcost check with BATCH_ESCAPED_TRANSACTION', async () => {
    const module = `import pg from '${root}node_modules/pg/lib/index.js'
export default async () => {
  const own = new pg.Client({ connectionString: ${JSON.stringify(test.url)} })
  await own.connect()
  await own.query('insert into orders select i, i % 7 from generate_series(1, 50) i')
  await own.end()
}
`
    const result = await check(module, {}, ['--url', test.url as string])
    expect(result.code).toBe(2)
    expect(result.output).toContain('BATCH_ESCAPED_TRANSACTION')
    expect(await count()).toBe(50)
    await test.exec('delete from orders')
  })
})
