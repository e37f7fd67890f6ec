import { WalcostError } from '../core/errors.js'
import { formatLsn } from '../decode/reader.js'
import type { Session } from '../driver/types.js'
import { readServer, type Server } from './server.js'

/** A point in WAL: the insert position as text (pg_lsn) and as a byte count. */
export interface WalPosition {
  lsn: string
  bytes: number
}

/** pg_stat_wal's cluster-wide counters at one moment. */
export interface StatWalCounters {
  records: number
  fpi: number
  bytes: number
}

/** A little over PostgreSQL 14's PGSTAT_STAT_INTERVAL. */
const STATS_INTERVAL_MS = 600

/**
 * The insert LSN (not the write LSN, which lags it): where the next WAL record will go. Its text
 * comes from the same call as its bytes: two calls in one statement may differ while others write.
 */
export async function insertPosition(session: Session): Promise<WalPosition> {
  const [row] = await session.query<{ bytes: string }>(
    `select (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::text as bytes`,
  )
  if (!row) throw new WalcostError('QUERY_FAILED', 'pg_current_wal_insert_lsn() returned nothing.')
  return { lsn: formatLsn(Number(row.bytes)), bytes: Number(row.bytes) }
}

/**
 * Makes the cumulative statistics current for the next read, outside a transaction: a backend's own
 * counters reach shared stats only when it goes idle, so the previous statement asks for a forced
 * flush (15+). A cached stats snapshot lasts only until its transaction ends, here the statement's.
 */
export async function refreshStats(session: Session, server: Server): Promise<void> {
  if (server.capabilities.forceStatsFlush) {
    await session.query('select pg_stat_force_next_flush()')
  } else {
    // PostgreSQL 14 sends a backend's counters when it goes idle, at most every 500 ms
    // (PGSTAT_STAT_INTERVAL): after that long, one more statement's idle sends them.
    await new Promise((resolve) => setTimeout(resolve, STATS_INTERVAL_MS))
    await session.query('select 1')
  }
}

/** pg_stat_wal's counters, made current. */
export async function readStatWal(session: Session, server: Server): Promise<StatWalCounters> {
  await refreshStats(session, server)
  const [row] = await session.query<{ records: string; fpi: string; bytes: string }>(
    'select wal_records::text as records, wal_fpi::text as fpi, wal_bytes::text as bytes from pg_stat_wal',
  )
  if (!row) throw new WalcostError('QUERY_FAILED', 'pg_stat_wal returned nothing.')
  return { records: Number(row.records), fpi: Number(row.fpi), bytes: Number(row.bytes) }
}

export function statWalDifference(before: StatWalCounters, after: StatWalCounters): StatWalCounters {
  return { records: after.records - before.records, fpi: after.fpi - before.fpi, bytes: after.bytes - before.bytes }
}

/** 17+: pg_logical_emit_message() flushes on request, inside a transaction as well as outside one. */
export function flushesInTransaction(server: Server): boolean {
  return server.capabilities.emitMessage === 'flush'
}

/**
 * Waits until WAL is flushed past `end`: pg_walinspect reads only flushed WAL and silently cuts a
 * window short (16+) or refuses it (15). An abort is never flushed synchronously. On 17+ a
 * non-transactional message asks for the flush itself; before, a transactional message committed
 * outside any transaction flushes everything before it. Otherwise the WAL writer gets there within
 * wal_writer_delay.
 */
export async function waitForFlush(
  session: Session,
  server: Server,
  end: WalPosition,
  timeoutMs: number,
  inTransaction: boolean,
): Promise<void> {
  if (flushesInTransaction(server)) {
    await session.query(`select pg_logical_emit_message(false, 'walcost', 'flush', true)`)
  } else if (server.capabilities.emitMessage === 'commit' && !inTransaction) {
    await session.query(`select pg_logical_emit_message(true, 'walcost', 'flush')`)
  } else if (server.capabilities.emitMessage === 'commit') {
    // Inside a transaction before 17 nothing commits and nothing asks for a flush, and the WAL
    // writer writes only full pages: a non-transactional message of a page fills the one the
    // window ends on, so the WAL writer writes it within wal_writer_delay. It lies after the window.
    await session.query(`select pg_logical_emit_message(false, 'walcost', repeat('.', $1::int))`, [
      server.facts.blockSize,
    ])
  }
  const deadline = Date.now() + timeoutMs
  for (let pause = 5; ; pause = Math.min(pause * 2, 200)) {
    const [row] = await session.query<{ flushed: boolean }>(
      'select pg_current_wal_flush_lsn() >= $1::pg_lsn as flushed',
      [end.lsn],
    )
    if (row?.flushed) return
    if (Date.now() > deadline) {
      throw new WalcostError(
        'WAL_NOT_FLUSHED',
        `WAL was not flushed past ${end.lsn} within ${timeoutMs} ms, so it cannot be read back yet. Raise flushTimeoutMs, or check synchronous_commit and the WAL writer${inTransaction && server.capabilities.emitMessage === false ? '; inside a transaction before PostgreSQL 17 walcost asks for the flush with pg_logical_emit_message: GRANT EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) TO the role' : ''}.`,
      )
    }
    await new Promise((resolve) => setTimeout(resolve, pause))
  }
}

/**
 * What a comparison cost the server it ran on: the WAL written meanwhile (the insert position's
 * advance: cluster-wide, so other sessions' WAL is in it too) and the checkpoints requested
 * (walcost's own CHECKPOINTs, and any that this much WAL forced past max_wal_size).
 */
export interface ServerCost {
  walBytes: number
  /** null where the role may not read the checkpoint counters. */
  checkpointsRequested: number | null
}

/** Starts counting what the server is made to do; the function it returns reads the count so far. */
export async function meterServerCost(session: Session): Promise<() => Promise<ServerCost>> {
  const read = async () => ({
    position: await insertPosition(session),
    checkpoints: (await readServer(session)).facts.checkpoints,
  })
  const start = await read()
  return async () => {
    const now = await read()
    return {
      walBytes: now.position.bytes - start.position.bytes,
      checkpointsRequested:
        start.checkpoints && now.checkpoints ? now.checkpoints.requested - start.checkpoints.requested : null,
    }
  }
}
