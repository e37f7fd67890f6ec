import { spawn } from 'node:child_process'
import pg from 'pg'
import { afterAll, beforeAll, expect, inject, it } from 'vitest'
import type { TopGap } from '../../src/cli/top-command.js'
import type { WalObservation } from '../../src/index.js'
import { describeOnPostgres, openPostgresDatabase, type TestDatabase } from '../support/backends.js'
import { type RunningServer, startPostgres } from '../support/postgres-server.js'

const cli = new URL('../../dist/cli.js', import.meta.url).pathname

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs `walcost top`, calling `whileRunning` with the child once it has printed its first interval. */
function runTop(args: string[], whileRunning: (child: ReturnType<typeof spawn>) => void = () => undefined) {
  return new Promise<Ran>((resolve, reject) => {
    const child = spawn(process.execPath, [cli, 'top', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let started = false
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
      if (!started && stdout.includes('\n')) {
        started = true
        whileRunning(child)
      }
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

/** Committed inserts and updates in a loop from a connection of its own, until `stop` says. */
async function workload(url: string, stop: () => boolean, from: number): Promise<number> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  let statements = 0
  try {
    for (let i = 0; !stop(); i++) {
      await client.query(
        `insert into events (id, account, payload) select g, g % 97, md5(g::text) from generate_series($1::int8, $1::int8 + 199) g`,
        [from + i * 200],
      )
      await client.query('update events set payload = payload || $2 where id between $1::int8 and $1::int8 + 49', [
        from + i * 200,
        'x',
      ])
      statements += 2
    }
  } finally {
    await client.end()
  }
  return statements
}

describeOnPostgres('walcost top on PostgreSQL 18', () => {
  let test: TestDatabase
  beforeAll(async () => {
    test = await openPostgresDatabase(inject('postgresUrl'))
    await test.exec(`create table events (id int8 primary key, account int4 not null, payload text);
      create index events_account on events (account)`)
  })
  afterAll(async () => {
    await test.close()
  })

  it('prints one wal-observation an interval, and the intervals add up to the whole window', async () => {
    let running = true
    const writing = workload(test.url!, () => !running, 0)
    // The slot that keeps the WAL still to be read, as the watch moves it on.
    const restartLsns: string[] = []
    const sampling = (async () => {
      while (running) {
        const rows = await test.query<{ restart: string }>(
          `select restart_lsn::text as restart from pg_replication_slots where slot_name like 'walcost\\_%' and temporary`,
        )
        for (const row of rows) restartLsns.push(row.restart)
        await new Promise((resolve) => setTimeout(resolve, 200))
      }
    })()
    let ran: Ran
    try {
      ran = await runTop(['--url', test.url!, '--json', '--interval', '1', '--seconds', '5'])
    } finally {
      running = false
    }
    const statements = await writing
    await sampling
    expect(ran.stderr).toBe('')
    expect(ran.code).toBe(0)
    expect(statements).toBeGreaterThan(10)
    const lines = ran.stdout.trim().split('\n')
    const intervals = lines.map((line) => JSON.parse(line) as WalObservation)
    expect(intervals.length).toBeGreaterThanOrEqual(4)
    expect(intervals.length).toBeLessThanOrEqual(6)
    for (const [i, interval] of intervals.entries()) {
      expect(interval.kind).toBe('wal-observation')
      expect(interval.attribution).toBe('wal')
      const parts = [...interval.relations!, ...interval.unattributed!]
      expect(parts.reduce((sum, part) => sum + part.bytes, 0)).toBe(interval.window.bytes)
      if (i > 0) expect(interval.window.startLsn).toBe(intervals[i - 1]!.window.endLsn)
      expect(interval.window.durationMs).toBeGreaterThan(0)
    }
    const first = intervals[0]!
    const last = intervals.at(-1)!
    const [whole] = await test.query<{ bytes: string; records: string }>(
      `select ($2::pg_lsn - $1::pg_lsn)::text as bytes,
              (select sum(count) from pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, false))::text as records`,
      [first.window.startLsn, last.window.endLsn],
    )
    const bytes = intervals.reduce((sum, interval) => sum + interval.window.bytes, 0)
    const records = intervals.reduce((sum, interval) => sum + interval.window.records!, 0)
    expect(Math.abs(bytes - Number(whole!.bytes))).toBeLessThanOrEqual(0.01 * Number(whole!.bytes))
    expect(Math.abs(records - Number(whole!.records))).toBeLessThanOrEqual(0.01 * Number(whole!.records))
    // The workload's table and both its indexes took WAL in the intervals, named.
    const named = (name: string) =>
      intervals.reduce(
        (sum, interval) => sum + (interval.relations!.find((relation) => relation.name === name)?.records ?? 0),
        0,
      )
    for (const name of ['events', 'events_pkey', 'events_account']) expect(named(name), name).toBeGreaterThan(100)
    // The slot was moved past the first interval while the watch ran.
    const [moved] = await test.query<{ moved: boolean }>(
      'select max(lsn) > $1::pg_lsn as moved from unnest($2::pg_lsn[]) lsn',
      [first.window.endLsn, restartLsns],
    )
    expect(moved!.moved).toBe(true)
  })

  it('ends cleanly at Ctrl-C (SIGINT) and prints the totals', async () => {
    let running = true
    const writing = workload(test.url!, () => !running, 10_000_000)
    let ran: Ran
    try {
      ran = await runTop(['--url', test.url!, '--interval', '1'], (child) => {
        setTimeout(() => child.kill('SIGINT'), 500)
      })
    } finally {
      running = false
    }
    await writing
    expect(ran.code).toBe(0)
    expect(ran.stdout).toContain('walcost top')
    expect(ran.stdout).toContain('WAL/s')
    const totals = ran.stdout.slice(ran.stdout.indexOf('Totals since start:'))
    expect(totals).toContain('Totals since start:')
    expect(totals).toMatch(/public\.events\b/)
  })
})

describeOnPostgres('walcost top across a server restart', () => {
  let server: RunningServer
  beforeAll(async () => {
    server = await startPostgres()
    const admin = new pg.Client({ connectionString: server.url })
    await admin.connect()
    await admin.query('create table events (id int8 primary key, account int4 not null, payload text)')
    await admin.end()
  })
  afterAll(() => server?.stop())

  /** Inserts from a connection of its own until `stop` says, ended quietly by the restart. */
  const writing = async (stop: () => boolean, from: number) => {
    await workload(server.url, stop, from).catch((error: unknown) => {
      if (!stop()) throw error
    })
  }

  it('connects again, marks the gap, and reads on: intervals from both sides of it, and their totals', async () => {
    let phase: 'before' | 'restarting' | 'after' = 'before'
    let before: Promise<void> = Promise.resolve()
    let after: Promise<void> = Promise.resolve()
    let restarted: Promise<void> = Promise.resolve()
    const ran = await runTop(['--url', server.url, '--json', '--interval', '1', '--seconds', '30'], (child) => {
      before = writing(() => phase !== 'before', 0)
      restarted = (async () => {
        await new Promise((resolve) => setTimeout(resolve, 2_000))
        phase = 'restarting'
        await before
        await server.restart()
        phase = 'after'
        after = writing(() => phase !== 'after', 10_000_000)
        // Intervals after the restart, then Ctrl-C, as a DBA would end it.
        await new Promise((resolve) => setTimeout(resolve, 6_000))
        phase = 'before'
        await after
        child.kill('SIGINT')
      })()
    })
    await restarted
    expect(ran.code, ran.stderr).toBe(0)
    expect(ran.stderr).toContain('walcost top: the connection was lost')
    const lines = ran.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as WalObservation | TopGap)
    const gaps = lines.filter((line): line is TopGap => line.kind === 'wal-gap')
    expect(gaps, ran.stderr).toHaveLength(1)
    const at = lines.indexOf(gaps[0]!)
    const sides = [lines.slice(0, at), lines.slice(at + 1)] as WalObservation[][]
    const events = (intervals: WalObservation[]) =>
      intervals.reduce(
        (sum, interval) => sum + (interval.relations?.find((relation) => relation.name === 'events')?.records ?? 0),
        0,
      )
    for (const side of sides) {
      expect(side.length).toBeGreaterThanOrEqual(1)
      expect(events(side)).toBeGreaterThan(0)
    }
    // Read on where it stopped, or from where the server was, the WAL between counted as missed.
    const lastBefore = sides[0]!.at(-1)!
    expect(gaps[0]!.from).toBe(lastBefore.window.endLsn)
    expect(sides[1]![0]!.window.startLsn).toBe(gaps[0]!.to)
    expect(gaps[0]!.downMs).toBeGreaterThan(0)
  })
})
