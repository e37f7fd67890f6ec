import type pg from 'pg'
import { openSession } from '../src/driver/open.js'
import { observeWal } from '../src/index.js'
import { readRecords } from '../src/wal/attribution.js'
import { ObserveTally } from '../src/wal/observe-tally.js'
import { readServer, walLayout } from '../src/wal/server.js'
import { median, quick, ratio, results, rows, run, seconds } from './common.js'

/**
 * observeWal's reading of a pgbench window (our reader and tally, after the fact, as a window is
 * read when no second session followed it) against pg_get_wal_block_info grouped by relation file,
 * on the same window, alternately; medians of the times. The window is a fixed number of
 * transactions, not of seconds: on a loaded machine a timed run writes less WAL, and the ratio
 * depends on the window's size (each side has a fixed cost).
 */
export async function observe(url: string, client: pg.Client) {
  try {
    await run('pgbench', ['-i', '-q', '-s', quick ? '1' : '10', url])
  } catch {
    rows.push({ section: 'observe', measure: 'pgbench', value: 'pgbench not found', target: '-' })
    return
  }
  await client.query('create extension if not exists pg_walinspect')
  const observation = await observeWal({
    db: url,
    run: () => run('pgbench', ['-c', '4', '-t', quick ? '500' : '9000', url]),
  })
  const start = { lsn: observation.window.startLsn, bytes: 0 }
  const end = { lsn: observation.window.endLsn, bytes: 0 }
  const [distance] = (
    await client.query<{ start: string; end: string }>(
      `select ($1::pg_lsn - '0/0'::pg_lsn)::text as start, ($2::pg_lsn - '0/0'::pg_lsn)::text as end`,
      [start.lsn, end.lsn],
    )
  ).rows
  start.bytes = Number(distance?.start)
  end.bytes = Number(distance?.end)
  const session = await openSession(url, {
    connectTimeoutMs: 10_000,
    lockTimeoutMs: 10_000,
    statementTimeoutMs: undefined,
  })
  const ours: number[] = []
  const blockInfo: number[] = []
  try {
    const layout = walLayout(await readServer(session))
    // The first round warms both up (the JIT here, the page cache there) and is not counted.
    for (let i = 0; i <= (quick ? 1 : 9); i++) {
      const [, read] = await seconds(async () => {
        const tally = new ObserveTally(layout)
        await readRecords(session, layout, start, end, tally.onRecord)
        return tally.summary(end.bytes - start.bytes)
      })
      ours.push(read)
      const [, grouped] = await seconds(() =>
        client.query(
          `select reltablespace, reldatabase, relfilenode, count(*), sum(record_length), sum(block_fpi_length)
             from pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn, false) group by 1, 2, 3`,
          [start.lsn, end.lsn],
        ),
      )
      blockInfo.push(grouped)
    }
    ours.shift()
    blockInfo.shift()
  } finally {
    await session.close()
  }
  const value = median(blockInfo) / median(ours)
  results.observe = {
    windowBytes: observation.window.bytes,
    records: observation.window.records,
    relations: observation.relations?.length ?? null,
    oursSeconds: ours,
    blockInfoSeconds: blockInfo,
    ratio: value,
  }
  rows.push({
    section: 'observe',
    measure: `pg_get_wal_block_info grouped by relfilenode / observeWal's reading, a pgbench window of ${(observation.window.bytes / 1e6).toFixed(1)} MB (${quick ? '2,000' : '36,000'} transactions), medians of ${ours.length} reads each`,
    value: ratio(value),
    target: quick ? '-' : '>= 3x',
  })
}
