import { spawn } from 'node:child_process'
import pg from 'pg'
import type { WalObservation } from '../src/index.js'
import { quick, results, rows } from './common.js'

/**
 * Sessions inserting wide rows in bulk, committed without waiting for their flush, on loopback, until
 * `untilMs` (performance.now()) or `statements` each: as much WAL a second as this machine writes.
 * The payload is stored plain (no compression, no TOAST), so that each row is its 1.8 kB in the WAL.
 */
async function wideInserts(url: string, sessions: number, untilMs: number, statements: number) {
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query('drop table if exists wide')
  await admin.query(
    'create table wide (id int8, payload text); alter table wide alter column payload set storage plain',
  )
  await admin.end()
  const session = async () => {
    const writer = new pg.Client({ connectionString: url, options: '-c synchronous_commit=off' })
    await writer.connect()
    try {
      for (let i = 0; i < statements && performance.now() < untilMs; i++)
        await writer.query(`insert into wide select g, repeat('x', 1800) from generate_series(1, 2000) g`)
    } finally {
      await writer.end()
    }
  }
  await Promise.all(Array.from({ length: sessions }, session))
}

/**
 * `walcost top` (the CLI as a user runs it: --json, 1 s intervals) over a server writing WAL as fast
 * as wideInserts makes it (the target: 50 MB/s on 2 cores), 30 s (8 with --quick). As each interval
 * is printed, a third connection reads the server's insert position: how far behind it that
 * interval ended is top's lag, one interval plus its reading (growing if the reading cannot keep
 * up). The intervals must follow each other and add up to the LSN distance they span.
 */
export async function topRate(url: string, client: pg.Client) {
  const seconds = quick ? 8 : 30
  const insertLsn = async () =>
    (await client.query<{ bytes: string }>(`select (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as bytes`))
      .rows[0]!.bytes
  // The load runs from 2 s before top starts until 2 s after it ends, 10,000 statements at the most.
  const loadEnds = performance.now() + (seconds + 4) * 1000
  const loadStart = { at: performance.now(), bytes: Number(await insertLsn()) }
  const load = wideInserts(url, 3, loadEnds, 10_000)
  load.catch(() => undefined)
  await new Promise((resolve) => setTimeout(resolve, 2_000))
  const cli = new URL('../dist/cli.js', import.meta.url).pathname
  const top = spawn(
    process.execPath,
    [cli, 'top', '--url', url, '--json', '--interval', '1', '--seconds', String(seconds)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  )
  const began = performance.now()
  const intervals: WalObservation[] = []
  const lagBytes: Promise<number>[] = []
  const printedAtS: number[] = []
  let pending = ''
  let stderr = ''
  top.stdout.on('data', (chunk: Buffer) => {
    pending += chunk.toString()
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n')) {
      const interval = JSON.parse(pending.slice(0, newline)) as WalObservation
      pending = pending.slice(newline + 1)
      printedAtS.push((performance.now() - began) / 1000)
      intervals.push(interval)
      lagBytes.push(
        client
          .query<{ lag: string }>(`select (pg_current_wal_insert_lsn() - $1::pg_lsn)::text as lag`, [
            interval.window.endLsn,
          ])
          .then((result) => Number(result.rows[0]!.lag)),
      )
    }
  })
  top.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  const code = await new Promise<number | null>((resolve) => top.once('close', resolve))
  await load
  const loadEnd = { at: performance.now(), bytes: Number(await insertLsn()) }
  await client.query('drop table wide')
  if (code !== 0) throw new Error(`walcost top exited with ${code}: ${stderr}`)
  const lagsMB = (await Promise.all(lagBytes)).map((bytes) => bytes / 1e6)
  const first = intervals[0]!
  const last = intervals.at(-1)!
  const [span] = (
    await client.query<{ bytes: string }>(`select ($2::pg_lsn - $1::pg_lsn)::text as bytes`, [
      first.window.startLsn,
      last.window.endLsn,
    ])
  ).rows
  const contiguous = intervals.every(
    (interval, i) => i === 0 || interval.window.startLsn === intervals[i - 1]!.window.endLsn,
  )
  const parts = intervals.reduce(
    (sum, interval) =>
      sum + [...interval.relations!, ...interval.unattributed!].reduce((bytes, part) => bytes + part.bytes, 0),
    0,
  )
  const watchedMs = intervals.reduce((sum, interval) => sum + (interval.window.durationMs ?? 0), 0)
  const serverMBps = parts / 1e6 / (watchedMs / 1000)
  const loadMBps = (loadEnd.bytes - loadStart.bytes) / 1e6 / ((loadEnd.at - loadStart.at) / 1000)
  const fellBehindS = (printedAtS.at(-1) ?? 0) - (printedAtS[0] ?? 0) - (printedAtS.length - 1)
  const half = Math.floor(lagsMB.length / 2)
  const maxOf = (values: number[]) => Math.max(...values)
  const addsUp = parts / Number(span!.bytes)
  results.topRate = {
    seconds,
    intervals: intervals.length,
    serverMBps,
    loadMBps,
    lagsMB,
    printedAtS,
    addsUp,
    contiguous,
  }
  const over = `${seconds} s of 1 s intervals over 3 sessions of bulk wide inserts (synchronous_commit off)`
  rows.push(
    {
      section: 'topRate',
      measure: `the WAL the server wrote while walcost top watched (over the load's whole run), ${over}`,
      value: `${serverMBps.toFixed(1)} MB/s (${loadMBps.toFixed(1)} MB/s)`,
      target: quick ? '-' : '>= 50 MB/s',
    },
    {
      section: 'topRate',
      measure:
        'walcost top: intervals printed of seconds elapsed; how much later the last came than one a second after the first',
      value: `${intervals.length} of ${seconds}; ${fellBehindS.toFixed(1)} s`,
      target: quick ? '-' : `${seconds}; ~0 s (kept up)`,
    },
    {
      section: 'topRate',
      measure:
        "how far behind the server's insert position each interval ended when printed: max (MB), the first half's / the second's",
      value: `${maxOf(lagsMB).toFixed(0)} MB (${(maxOf(lagsMB) / serverMBps).toFixed(1)} s of its WAL); ${maxOf(lagsMB.slice(0, half)).toFixed(0)} / ${maxOf(lagsMB.slice(half)).toFixed(0)} MB`,
      target: 'not growing',
    },
    {
      section: 'topRate',
      measure: 'the intervals, contiguous, add up to the LSN distance they span',
      value: `${contiguous ? 'contiguous' : 'NOT contiguous'}, ${addsUp.toFixed(4)}`,
      target: '1 within 1%',
    },
  )
}
