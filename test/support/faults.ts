import pg from 'pg'
import { expect } from 'vitest'
import { WalcostError } from '../../src/index.js'

/** The WalcostError a call fails with; fails the test if it succeeds or throws anything else. */
export async function failure(work: Promise<unknown>): Promise<WalcostError> {
  const error = await work.then(() => undefined, (caught: unknown) => caught)
  expect(error).toBeInstanceOf(WalcostError)
  return error as WalcostError
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 25))

/** Pids of walcost's backends in this database whose current statement is like `pattern`. */
async function walcostBackends(client: pg.Client, pattern = '%'): Promise<number[]> {
  const { rows } = await client.query<{ pid: number }>(
    `select pid from pg_stat_activity where application_name = 'walcost' and datname = current_database() and query like $1`, [pattern])
  return rows.map((row) => row.pid)
}

/** Runs `work` with a side connection to `url`, closed afterwards. */
async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await work(client)
  } finally {
    await client.end()
  }
}

/** Waits (10 s at most) until a walcost backend runs a statement like `pattern`; true if one did. */
export function waitForWalcost(url: string, pattern: string): Promise<boolean> {
  return withClient(url, async (client) => {
    for (let tries = 0; tries < 400; tries++) {
      if ((await walcostBackends(client, pattern)).length > 0) return true
      await pause()
    }
    return false
  })
}

/** Waits until a walcost backend runs a statement like `pattern`, then ends it (pg_terminate_backend). */
export async function terminateWalcostWhen(url: string, pattern: string): Promise<void> {
  expect(await waitForWalcost(url, pattern)).toBe(true)
  await withClient(url, async (client) => {
    for (const pid of await walcostBackends(client, pattern)) await client.query('select pg_terminate_backend($1)', [pid])
  })
}

/** Waits (10 s at most) until no walcost backend is left in this database. */
export function waitForNoWalcost(url: string): Promise<void> {
  return withClient(url, async (client) => {
    for (let tries = 0; tries < 400 && (await walcostBackends(client)).length > 0; tries++) await pause()
  })
}
