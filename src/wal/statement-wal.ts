import { fromServerError } from '../core/errors.js'
import type { Session } from '../driver/types.js'

/** One statement's WAL over a window, from pg_stat_statements' counters at both ends. */
export interface StatementWal {
  /** null for another role's statements where this role may not see them (pg_read_all_stats): those are summed by role and database. */
  queryId: string | null
  /** The normalised text; null where queryId is. */
  query: string | null
  /** The role that ran it; null for one dropped since. */
  role: string | null
  /** null for a database dropped since. */
  database: string | null
  /** Run by a client (true) rather than inside a function or procedure (pg_stat_statements.track = all). */
  topLevel: boolean
  calls: number
  walBytes: number
  walRecords: number
  walFpi: number
}

/**
 * WAL by statement, the source of last resort where the WAL itself cannot be read: coarser than
 * the WAL's split (a statement counts whole when it ends; planning, commits and background work
 * count nowhere).
 */
export interface StatementsWal {
  source: 'pg_stat_statements'
  /** Statements that took WAL in the window, most bytes first. */
  statements: StatementWal[]
  /**
   * Entries pg_stat_statements evicted during the window (pg_stat_statements_info.dealloc, past
   * pg_stat_statements.max): an evicted statement's WAL before its eviction is missing here.
   */
  evicted: number
}

interface Counters {
  calls: number
  walBytes: number
  walRecords: number
  walFpi: number
}

/** The counters at one end of a window, by statement; or why pg_stat_statements cannot be read. */
export type StatementSnapshot =
  | { schema: string; counters: Map<string, Counters>; dealloc: number; reset: string | null }
  | { unavailable: string }

const NOT_INSTALLED =
  'pg_stat_statements is not installed in this database: with pg_stat_statements in shared_preload_libraries, CREATE EXTENSION pg_stat_statements gives the WAL by statement'

/** One end's counters, summed where the role sees no queryid (another role's statements). */
export async function readStatementSnapshot(session: Session, schema?: string): Promise<StatementSnapshot> {
  if (schema === undefined) {
    const [extension] = await session
      .query<{ schema: string }>(
        `select quote_ident(n.nspname) as schema from pg_extension e join pg_namespace n on n.oid = e.extnamespace
          where e.extname = 'pg_stat_statements'`,
      )
      .catch((error: unknown) => {
        throw fromServerError(error, 'looking for pg_stat_statements')
      })
    if (!extension) return { unavailable: NOT_INSTALLED }
    return readStatementSnapshot(session, extension.schema)
  }
  try {
    // schema is quote_ident's output. Without the texts: reading them is the costly part.
    const rows = await session.query<Record<'key' | 'calls' | 'wal_bytes' | 'wal_records' | 'wal_fpi', string>>(
      `select concat_ws(':', userid, dbid, toplevel, queryid) as key, sum(calls)::text as calls,
              sum(wal_bytes)::text as wal_bytes, sum(wal_records)::text as wal_records, sum(wal_fpi)::text as wal_fpi
         from ${schema}.pg_stat_statements(false) group by userid, dbid, toplevel, queryid`,
    )
    const [info] = await session.query<{ dealloc: string; reset: string | null }>(
      `select dealloc::text as dealloc, stats_reset::text as reset from ${schema}.pg_stat_statements_info`,
    )
    const counters = new Map<string, Counters>()
    for (const row of rows) {
      counters.set(row.key, {
        calls: Number(row.calls),
        walBytes: Number(row.wal_bytes),
        walRecords: Number(row.wal_records),
        walFpi: Number(row.wal_fpi),
      })
    }
    return { schema, counters, dealloc: Number(info?.dealloc ?? 0), reset: info?.reset ?? null }
  } catch (error) {
    // Not preloaded, an extension version without WAL counters (before 1.9), no privilege.
    const reason = error instanceof Error ? error.message : String(error)
    return {
      unavailable: `pg_stat_statements could not be read (${reason}): it needs pg_stat_statements in shared_preload_libraries, and ALTER EXTENSION pg_stat_statements UPDATE where it is older than 1.9`,
    }
  }
}

/**
 * The WAL each statement took between two snapshots, named; a string says why there is none (not
 * installed, or reset during the window, which leaves nothing to subtract from).
 */
export async function statementWalBetween(
  session: Session,
  before: StatementSnapshot,
): Promise<StatementsWal | string> {
  if ('unavailable' in before) return before.unavailable
  return statementWalOf(session, before, await readStatementSnapshot(session, before.schema))
}

/** The next snapshot of the same statements as `before` (a watch's next interval end). */
export function nextStatementSnapshot(session: Session, before: StatementSnapshot): Promise<StatementSnapshot> {
  return 'unavailable' in before ? Promise.resolve(before) : readStatementSnapshot(session, before.schema)
}

/** The WAL each statement took from one snapshot to the next, named; a string says why there is none. */
export async function statementWalOf(
  session: Session,
  before: StatementSnapshot,
  after: StatementSnapshot,
): Promise<StatementsWal | string> {
  if ('unavailable' in before) return before.unavailable
  if ('unavailable' in after) return after.unavailable
  if (after.reset !== before.reset)
    return 'pg_stat_statements was reset during the window, so its counters give no WAL by statement for it'
  const changed: Array<{ key: string } & Counters> = []
  for (const [key, counters] of after.counters) {
    const earlier = before.counters.get(key) ?? { calls: 0, walBytes: 0, walRecords: 0, walFpi: 0 }
    const difference = {
      key,
      calls: counters.calls - earlier.calls,
      walBytes: counters.walBytes - earlier.walBytes,
      walRecords: counters.walRecords - earlier.walRecords,
      walFpi: counters.walFpi - earlier.walFpi,
    }
    // Below zero: summed entries of which some were evicted; what is left cannot be told apart.
    if (difference.walRecords > 0 && difference.walBytes > 0) changed.push(difference)
  }
  const names = await statementNames(session, before.schema, changed)
  return {
    source: 'pg_stat_statements',
    statements: changed
      .map(({ key, ...counters }) => {
        // The key is userid:dbid:toplevel[:queryid] (concat_ws leaves a null queryid out).
        const [, , topLevel, queryId = null] = key.split(':')
        const name = names.get(key)
        return {
          queryId,
          query: queryId === null ? null : (name?.query ?? null),
          role: name?.role ?? null,
          database: name?.database ?? null,
          topLevel: topLevel === 't',
          ...counters,
        }
      })
      .sort((a, b) => b.walBytes - a.walBytes),
    evicted: after.dealloc - before.dealloc,
  }
}

type StatementName = Pick<StatementWal, 'query' | 'role' | 'database'>

/** Texts, roles and databases of the statements that changed, by key: one read of the texts. */
async function statementNames(
  session: Session,
  schema: string,
  changed: Array<{ key: string }>,
): Promise<Map<string, StatementName>> {
  if (changed.length === 0) return new Map()
  try {
    const rows = await session.query<{
      key: string
      query: string | null
      role: string | null
      database: string | null
    }>(
      `select concat_ws(':', s.userid, s.dbid, s.toplevel, s.queryid) as key, s.query,
              r.rolname::text as role, d.datname::text as database
         from ${schema}.pg_stat_statements(true) s
         left join pg_roles r on r.oid = s.userid left join pg_database d on d.oid = s.dbid
        where concat_ws(':', s.userid, s.dbid, s.toplevel, s.queryid) = any($1::text[])`,
      [changed.map((statement) => statement.key)],
    )
    return new Map(rows.map(({ key, ...name }) => [key, name]))
  } catch (error) {
    throw fromServerError(error, 'reading the texts of pg_stat_statements')
  }
}
