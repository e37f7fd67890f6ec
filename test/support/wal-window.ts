import type { WalLayout } from '../../src/decode/reader.js'
import type { Session } from '../../src/driver/types.js'
import type { RecordTypeTotals } from '../../src/wal/attribution.js'
import { insertPosition, type WalPosition } from '../../src/wal/snapshot.js'

// Every index access method, TOAST, and images with a hole, in one table. No autovacuum: the windows
// roll back and leave dead tuples, and a vacuum between a checkpoint and a batch would take its images.
export const MIXED_SETUP = `
  create table mixed (id int8 primary key, p point, tags text[], doc jsonb, h uuid, at timestamptz, body text)
    with (autovacuum_enabled = false);
  create index mixed_p on mixed using gist (p);
  create index mixed_tags on mixed using gin (tags);
  create index mixed_doc on mixed using gin (doc jsonb_path_ops);
  create index mixed_h on mixed using hash (h);
  create index mixed_at on mixed using brin (at);
  insert into mixed select i, point((i::bigint * 7919) % 10007, (i::bigint * 104729) % 10009), array['t' || i % 37, 'u' || i % 11],
    jsonb_build_object('k', i % 97), md5(i::text)::uuid, timestamptz '2026-01-01' + i * interval '1 s', null
    from generate_series(1, 20000) i`

/** Rows for the table `mixed` of every index access method; one in 50 carries a TOASTed text. */
export const batch = (
  from: number,
  count: number,
) => `insert into mixed select i, point((i::bigint * 7919) % 10007, (i::bigint * 104729) % 10009),
    array['t' || i % 37, 'u' || i % 11], jsonb_build_object('k', i % 97), md5(i::text)::uuid, timestamptz '2026-01-01' + i * interval '1 s',
    case when i % 50 = 0 then (select string_agg(md5((i * 1000 + g)::text), '') from generate_series(1, 100) g) end
    from generate_series(${from}, ${from + count - 1}) i`

export interface Window {
  start: WalPosition
  end: WalPosition
  xids: string[]
}

/** A batch between two insert positions, in a transaction rolled back, with pg_switch_wal() in the middle. */
export async function windowOf(session: Session, compression: string): Promise<Window> {
  await session.exec('begin')
  await session.query(`select set_config('wal_compression', $1, true)`, [compression])
  await session.exec('checkpoint')
  const start = await insertPosition(session)
  await session.exec(batch(100_000, 3_000))
  await session.query('select pg_switch_wal()')
  await session.exec(batch(200_000, 3_000))
  return closeWindow(session, start)
}

/**
 * Ends a window opened at `start` in the transaction running now: takes the insert position and
 * the xids the transaction holds, rolls it back, and commits a message so that WAL is flushed past
 * the window, as walcost's own wait does.
 */
export async function closeWindow(session: Session, start: WalPosition): Promise<Window> {
  const end = await insertPosition(session)
  const [held] = await session.query<{ xids: string[] }>(
    `select array_agg(transactionid::text) as xids from pg_locks where pid = pg_backend_pid() and locktype = 'transactionid'`,
  )
  await session.exec('rollback')
  await session.query(`select pg_logical_emit_message(true, 'walcost-test', 'flush')`)
  return { start, end, xids: held?.xids ?? [] }
}

export async function layoutOf(session: Session): Promise<WalLayout> {
  const [row] = await session.query<{ major: string; block: string; segment: string }>(
    `select (current_setting('server_version_num')::int / 10000)::text as major, current_setting('block_size') as block,
            pg_size_bytes(current_setting('wal_segment_size'))::text as segment`,
  )
  return { major: Number(row!.major), blockSize: Number(row!.block), segmentSize: Number(row!.segment) }
}

/**
 * One INSERT run through EXPLAIN (ANALYZE, WAL) between two insert positions, rolled back: the
 * server's own count of the statement's WAL records, images and bytes (sum of xl_tot_len), which
 * PostgreSQL 14 has where it has no pg_walinspect.
 */
export async function explainedWindow(
  session: Session,
): Promise<Window & { explained: { records: number; fpi: number; bytes: number } }> {
  await session.exec('begin')
  await session.exec('checkpoint')
  const start = await insertPosition(session)
  const [plan] = await session.query<{ 'QUERY PLAN': Array<{ Plan: Record<string, number> }> }>(
    `explain (analyze, wal, format json) ${batch(400_000, 3_000)}`,
  )
  const root = plan!['QUERY PLAN'][0]!.Plan
  return {
    ...(await closeWindow(session, start)),
    explained: { records: root['WAL Records'] ?? 0, fpi: root['WAL FPI'] ?? 0, bytes: root['WAL Bytes'] ?? 0 },
  }
}

/** pg_get_wal_stats over a window, per record type, in the shape of our reader's byType. */
export async function walStatsOf(session: Session, window: Window): Promise<Record<string, RecordTypeTotals>> {
  const rows = await session.query<{ type: string; count: string; record_size: string; fpi_size: string }>(
    `select "resource_manager/record_type" as type, count::text, record_size::text, fpi_size::text
       from pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true) where count > 0`,
    [window.start.lsn, window.end.lsn],
  )
  return Object.fromEntries(
    rows.map((row) => [
      row.type,
      { records: Number(row.count), recordBytes: Number(row.record_size), fpiBytes: Number(row.fpi_size) },
    ]),
  )
}
