import pg from 'pg'
import { expect } from 'vitest'
import { WalcostError } from '../../src/index.js'

/** The WalcostError a call fails with; fails the test if it succeeds or throws anything else. */
export async function failure(work: Promise<unknown>): Promise<WalcostError> {
  const error = await work.then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error).toBeInstanceOf(WalcostError)
  return error as WalcostError
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 25))

/**
 * Pids of walcost's backends in this database whose current statement is like `pattern`; with
 * `sleeping`, only those waiting in pg_sleep, so that a statement which sleeps in one run and not
 * in another is caught in the run that sleeps.
 */
async function walcostBackends(client: pg.Client, pattern = '%', sleeping = false): Promise<number[]> {
  const { rows } = await client.query<{ pid: number }>(
    `select pid from pg_stat_activity where application_name = 'walcost' and datname = current_database() and query like $1
        and (not $2 or wait_event = 'PgSleep')`,
    [pattern, sleeping],
  )
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

/** Waits (10 s at most) until walcost backends run a statement like `pattern`; their pids, or none. */
async function pidsRunning(url: string, pattern: string, sleeping = false): Promise<number[]> {
  return withClient(url, async (client) => {
    for (let tries = 0; tries < 400; tries++) {
      const pids = await walcostBackends(client, pattern, sleeping)
      if (pids.length > 0) return pids
      await pause()
    }
    return []
  })
}

/** Waits (10 s at most) until a walcost backend runs a statement like `pattern`; true if one did. */
export async function waitForWalcost(url: string, pattern: string): Promise<boolean> {
  return (await pidsRunning(url, pattern)).length > 0
}

/**
 * Waits until a walcost backend runs a statement like `pattern`, then ends that backend
 * (pg_terminate_backend) by the pid seen: by the time a second look is taken, the statement may
 * have moved on, and the backend must be ended all the same.
 */
export async function terminateWalcostWhen(url: string, pattern: string, sleeping = false): Promise<void> {
  const pids = await pidsRunning(url, pattern, sleeping)
  expect(pids.length).toBeGreaterThan(0)
  await withClient(url, async (client) => {
    for (const pid of pids) {
      const [ended] = (await client.query<{ ended: boolean }>('select pg_terminate_backend($1) as ended', [pid])).rows
      expect(ended?.ended).toBe(true)
    }
  })
}

/** Pids of walcost's backends in this database now, in order. */
export async function walcostPids(url: string): Promise<number[]> {
  return (await withClient(url, (client) => walcostBackends(client))).sort((a, b) => a - b)
}

/** Waits (10 s at most) until no walcost backend is left in this database. */
export function waitForNoWalcost(url: string): Promise<void> {
  return withClient(url, async (client) => {
    for (let tries = 0; tries < 400 && (await walcostBackends(client)).length > 0; tries++) await pause()
  })
}
