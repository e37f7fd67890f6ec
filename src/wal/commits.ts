import { WalcostError } from '../core/errors.js'
import type { Session } from '../driver/types.js'
import type { Server } from './server.js'
import { insertPosition, refreshStats } from './snapshot.js'

// What committing costs, apart from the rows: a commit record in WAL and, with synchronous_commit
// on, a WAL write and flush that the committing session waits for. Measured with real commits of
// transactions that only take a transaction id: each logs its commit record and nothing else, and
// nothing persists (not even a temporary table's schema). PostgreSQL flushes at commit only for a
// transaction that wrote WAL of its own, so the writes and fsyncs are counted over commits that
// also log a transactional message (pg_logical_emit_message), where the role may call it.

/** What one commit adds, measured over `commits` real commits. */
export interface CommitCost {
  commits: number
  /** WAL each commit wrote: its commit record, aligned (insert-LSN distance over the commits). */
  walBytesPerCommit: number
  /** WAL write() calls and fsyncs each commit caused; null where they could not be counted (see countsNote). */
  writesPerCommit: number | null
  syncsPerCommit: number | null
  /** Where the write and sync counts come from, or why there are none. */
  countsNote: string
  synchronousCommit: string
}

interface FlushCounters {
  writes: number
  syncs: number
}

/** Makes `commits` commits, twice, and reads what they wrote and flushed. */
export async function measureCommits(session: Session, server: Server, commits: number): Promise<CommitCost> {
  const io = server.facts.versionNum >= 180_000
  const source = io ? "pg_stat_io (object 'wal')" : 'pg_stat_wal'
  const start = await insertPosition(session)
  // Outside an explicit transaction every statement commits by itself.
  for (let commit = 0; commit < commits; commit++) await session.query('select pg_current_xact_id()')
  const end = await insertPosition(session)
  let counts: FlushCounters | null = null
  if (server.capabilities.emitMessage !== false) {
    const before = await readFlushCounters(session, server, io)
    // Each statement its own transaction, as above: an explicit BEGIN that a cancel struck before
    // its COMMIT would leave the connection inside an aborted transaction.
    for (let commit = 0; commit < commits; commit++) {
      await session.query(`select pg_logical_emit_message(true, 'walcost', 'commit')`)
    }
    const after = await readFlushCounters(session, server, io)
    counts = { writes: after.writes - before.writes, syncs: after.syncs - before.syncs }
  }
  return {
    commits,
    walBytesPerCommit: (end.bytes - start.bytes) / commits,
    writesPerCommit: counts && counts.writes / commits,
    syncsPerCommit: counts && counts.syncs / commits,
    countsNote: counts
      ? `counted by ${source} over ${commits} commits that each logged a message`
      : 'not counted: the role may not call pg_logical_emit_message (GRANT EXECUTE ON FUNCTION pg_logical_emit_message(boolean, text, text) TO the role)',
    synchronousCommit: server.facts.synchronousCommit,
  }
}

/** The cluster's WAL write and sync counts, made current as readStatWal makes pg_stat_wal current. */
async function readFlushCounters(session: Session, server: Server, io: boolean): Promise<FlushCounters> {
  await refreshStats(session, server)
  const [row] = await session.query<{ writes: string; syncs: string }>(
    io
      ? `select coalesce(sum(writes), 0)::text as writes, coalesce(sum(fsyncs), 0)::text as syncs from pg_stat_io where object = 'wal'`
      : 'select wal_write::text as writes, wal_sync::text as syncs from pg_stat_wal',
  )
  if (!row) throw new WalcostError('QUERY_FAILED', 'the WAL write counters returned nothing.')
  return { writes: Number(row.writes), syncs: Number(row.syncs) }
}
