import { fromServerError, WalcostError } from '../core/errors.js'
import type { WalLayout } from '../decode/reader.js'
import type { Session } from '../driver/types.js'
import { replicationRefusalOf, walStreamOf } from './replication.js'

/** The server settings that change what an insert writes, reported with every measurement. */
export interface ServerFacts {
  version: string
  versionNum: number
  fullPageWrites: boolean
  walCompression: string
  walLevel: string
  walLogHints: boolean
  dataChecksums: boolean
  checkpointTimeout: string
  maxWalSize: string
  synchronousCommit: string
  blockSize: number
  walSegmentSize: number
  checkpointTimeoutSeconds: number
  maxWalSizeBytes: number
  sharedBuffersBytes: number
  /** Checkpoints the server has run since `since` (pg_stat_checkpointer on 17+, pg_stat_bgwriter before). */
  checkpoints: { timed: number; requested: number; since: string | null } | null
}

/** What the connected role may do here; decides which steps of a measurement can run. */
export interface Capabilities {
  /** walcost reads the WAL bytes itself (walBytes says how). */
  readWal: boolean
  /**
   * Where those bytes come from: 'replication' (a stream from a walsender, wal/replication.ts),
   * 'files' (the segments through pg_read_binary_file: superuser, or EXECUTE on
   * pg_read_binary_file(text, bigint, bigint); membership in pg_read_server_files alone is refused;
   * PGlite reads its own files), or null.
   */
  walBytes: 'replication' | 'files' | null
  /**
   * The role may stream WAL over a replication connection: superuser or REPLICATION, wal_level
   * above minimal, a free slot and WAL sender, and no synchronous_standby_names that a walsender
   * reporting its flush position could match ('*', or one naming walcost). Whether the connection is
   * admitted (a pooler in between may refuse it) is known only by connecting.
   */
  replication: boolean
  /**
   * Why the replication connection walcost opened for a role with REPLICATION was refused (a
   * connection pooler in between, say); null where none was tried or it opened.
   */
  replicationRefused: string | null
  /** CHECKPOINT is allowed: superuser, or pg_checkpoint (PostgreSQL 15+). */
  checkpoint: boolean
  /** Where pg_walinspect's functions are (quoted schema), or why attribution is not possible. */
  walinspect: { schema: string; temporary: boolean } | { unavailable: string }
  /** pg_stat_force_next_flush() exists (PostgreSQL 15+). */
  forceStatsFlush: boolean
  /**
   * How pg_logical_emit_message() can force WAL to disk: 'flush' (17+: it flushes by itself),
   * 'commit' (its commit flushes), or false when the role may not call it.
   */
  emitMessage: 'flush' | 'commit' | false
  /** pg_control_checkpoint() may be called: a checkpoint completed in the window can be seen. */
  readControl: boolean
  /** A temporary physical replication slot may be created to keep the window's WAL until it is read. */
  reserveWal: boolean
  /** wal_init_zero may be turned off for a transaction (superuser). */
  skipWalZeroFill: boolean
}

/**
 * Where a result's WAL came from, the least privilege first: a replication stream, the segment
 * files (pg_read_binary_file, or PGlite's own), pg_walinspect, pg_stat_statements' WAL by statement,
 * or the LSN and pg_stat_wal totals only.
 */
export const WAL_SOURCES = ['replication', 'files', 'walinspect', 'statements', 'totals'] as const
export type WalSource = (typeof WAL_SOURCES)[number]

export interface Server {
  facts: ServerFacts
  capabilities: Capabilities
}

interface ServerRow extends Record<string, unknown> {
  version_num: string
  version: string
  full_page_writes: string
  wal_compression: string
  wal_level: string
  wal_log_hints: string
  data_checksums: string
  checkpoint_timeout: string
  max_wal_size: string
  synchronous_commit: string
  block_size: string
  wal_segment_size: string
  read_binary_file: boolean
  checkpoint_timeout_s: string
  max_wal_size_bytes: string
  shared_buffers_bytes: string | null
  superuser: boolean
  pg_checkpoint: boolean
  read_server_files: boolean
  walinspect_schema: string | null
  walinspect_executable: boolean | null
  force_flush: boolean
  emit_message: 'flush' | 'commit' | null
  read_control: boolean
  reserve_wal: boolean
  replication: boolean
  checkpoint_view: CheckpointView | null
}

/** Where the checkpoint counters are: pg_stat_checkpointer (17+), else pg_stat_bgwriter. */
type CheckpointView = 'pg_stat_checkpointer' | 'pg_stat_bgwriter'

/** What the WAL reader needs to know of the server. */
export function walLayout(server: Server): WalLayout {
  return {
    major: Math.floor(server.facts.versionNum / 10_000),
    blockSize: server.facts.blockSize,
    segmentSize: server.facts.walSegmentSize,
  }
}

/**
 * The grants that let walcost read the WAL itself (Capabilities.readWal), the least first, each
 * with what else it allows, in the words of a note.
 */
export const READ_WAL_GRANT =
  "ALTER ROLE the_role REPLICATION (the least: the role may then stream the whole cluster's WAL, every change to every table, but reads no file; walcost's replication connection names the database, so pg_hba.conf admits it by the database's line, with no `replication` line); or GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint) TO the role (it may then read any file the server can: every table's pages, the configuration, the server's keys); or run as a superuser"

/** The grant that lets the server split a window's WAL by relation for walcost (WindowSplit), in the words of a note. */
const WALINSPECT_GRANT =
  'on PostgreSQL 16 and later, CREATE EXTENSION pg_walinspect and GRANT pg_read_server_files TO the role (the server then splits the WAL, slower than walcost reading it; the role may also read any file the server can, through COPY)'

/**
 * How a window's WAL is split by relation: by walcost's reader over the WAL bytes, or by
 * pg_walinspect's block info on the server (16+) for a role that may call it but not read the WAL
 * (pg_read_server_files); null where it cannot be (totals only).
 */
export type WindowSplit = { by: 'reader' } | { by: 'walinspect'; schema: string } | null

export function windowSplit(server: Server): WindowSplit {
  if (server.capabilities.readWal) return { by: 'reader' }
  const { walinspect } = server.capabilities
  if ('schema' in walinspect && !walinspect.temporary && server.facts.versionNum >= 160_000)
    return { by: 'walinspect', schema: walinspect.schema }
  return null
}

const MIN_VERSION_NUM = 140_000
/** Where pg_walinspect is created, inside a transaction that is rolled back, when it is not installed. */
export const TEMPORARY_WALINSPECT_SCHEMA = '"walcost_walinspect"'

/** What does not change during a session: its settings and what the role may do. */
interface Settings {
  facts: Omit<ServerFacts, 'checkpoints'>
  capabilities: Capabilities
  /** The view of the checkpoint counters; null where the role may not read it. */
  checkpointView: CheckpointView | null
}

const sessionSettings = new WeakMap<Session, Promise<Settings>>()

/**
 * The server's settings and the role's capabilities, read once per session with queries (never
 * from the version string alone), and its checkpoint counters as they are now.
 */
export async function readServer(session: Session): Promise<Server> {
  const { facts, capabilities, checkpointView } = await settingsOf(session)
  return {
    facts: { ...facts, checkpoints: await readCheckpoints(session, checkpointView) },
    capabilities: await withStream(session, capabilities),
  }
}

/** What the role may do here, without the round trip for the checkpoint counters. */
export async function readCapabilities(session: Session): Promise<Capabilities> {
  return withStream(session, (await settingsOf(session)).capabilities)
}

/** A session that reads through a replication stream reads the WAL whatever its grants; one refused says why. */
async function withStream(session: Session, capabilities: Capabilities): Promise<Capabilities> {
  if (await walStreamOf(session)) return { ...capabilities, readWal: true, walBytes: 'replication' }
  const refused = await replicationRefusalOf(session)
  return refused ? { ...capabilities, replicationRefused: refused } : capabilities
}

/**
 * What would let the role read the WAL (or, `to` 'split', have a window split by relation), in the
 * words of a note: first why its replication connection was refused, where it was.
 */
export function readWalAdvice(capabilities: Capabilities, to: 'read' | 'split' = 'read'): string {
  const grants = to === 'split' ? `${READ_WAL_GRANT}; or, ${WALINSPECT_GRANT}` : READ_WAL_GRANT
  const refused = capabilities.replicationRefused
  return refused
    ? `the role has REPLICATION, but the replication connection walcost opened was refused (${refused}): connect to the server itself rather than through a pooler that refuses replication connections (PgBouncer before 1.23), and leave a WAL sender free (max_wal_senders); otherwise ${grants}`
    : grants
}

function settingsOf(session: Session): Promise<Settings> {
  let settings = sessionSettings.get(session)
  if (!settings) {
    settings = readSettings(session)
    sessionSettings.set(session, settings)
    settings.catch(() => sessionSettings.delete(session))
  }
  return settings
}

async function readSettings(session: Session): Promise<Settings> {
  let row: ServerRow | undefined
  try {
    ;[row] = await session.query<ServerRow>(`
      select current_setting('server_version_num') as version_num,
             current_setting('server_version') as version,
             current_setting('full_page_writes') as full_page_writes,
             current_setting('wal_compression') as wal_compression,
             current_setting('wal_level') as wal_level,
             current_setting('wal_log_hints') as wal_log_hints,
             current_setting('data_checksums') as data_checksums,
             current_setting('checkpoint_timeout') as checkpoint_timeout,
             current_setting('max_wal_size') as max_wal_size,
             current_setting('synchronous_commit') as synchronous_commit,
             current_setting('block_size') as block_size,
             pg_size_bytes(current_setting('wal_segment_size'))::text as wal_segment_size,
             has_function_privilege('pg_read_binary_file(text,bigint,bigint)', 'execute') as read_binary_file,
             extract(epoch from current_setting('checkpoint_timeout')::interval)::text as checkpoint_timeout_s,
             pg_size_bytes(current_setting('max_wal_size'))::text as max_wal_size_bytes,
             -- Shown in blocks where it has no unit.
             (case when current_setting('shared_buffers', true) ~ '^[0-9]+$'
                   then current_setting('shared_buffers', true)::int8 * current_setting('block_size')::int8
                   else pg_size_bytes(current_setting('shared_buffers', true)) end)::text as shared_buffers_bytes,
             -- Whether the counters may be read is asked here: a refused read inside the measuring
             -- transaction would abort it.
             case when to_regclass('pg_catalog.pg_stat_checkpointer') is not null
                  then case when has_table_privilege(to_regclass('pg_catalog.pg_stat_checkpointer'), 'select') then 'pg_stat_checkpointer' end
                  when has_table_privilege(to_regclass('pg_catalog.pg_stat_bgwriter'), 'select') then 'pg_stat_bgwriter'
             end as checkpoint_view,
             coalesce((select rolsuper from pg_roles where rolname = current_user), false) as superuser,
             coalesce(pg_has_role(current_user, to_regrole('pg_checkpoint'), 'member'), false) as pg_checkpoint,
             coalesce(pg_has_role(current_user, to_regrole('pg_read_server_files'), 'member'), false) as read_server_files,
             (select quote_ident(n.nspname) from pg_extension e join pg_namespace n on n.oid = e.extnamespace
               where e.extname = 'pg_walinspect') as walinspect_schema,
             (select has_function_privilege(p.oid, 'execute') from pg_proc p join pg_extension e on p.pronamespace = e.extnamespace
               where e.extname = 'pg_walinspect' and p.proname = 'pg_get_wal_records_info' limit 1) as walinspect_executable,
             to_regprocedure('pg_stat_force_next_flush()') is not null as force_flush,
             case when has_function_privilege(to_regprocedure('pg_logical_emit_message(boolean,text,text,boolean)'), 'execute') then 'flush'
                  when has_function_privilege(to_regprocedure('pg_logical_emit_message(boolean,text,text)'), 'execute') then 'commit'
             end as emit_message,
             has_function_privilege('pg_control_checkpoint()', 'execute') as read_control,
             coalesce((select rolsuper or rolreplication from pg_roles where rolname = current_user), false)
               and current_setting('wal_level') <> 'minimal'
               and current_setting('max_replication_slots')::int > (select count(*) from pg_replication_slots) as reserve_wal,
             coalesce((select rolsuper or rolreplication from pg_roles where rolname = current_user), false)
               and current_setting('wal_level') <> 'minimal'
               and current_setting('max_replication_slots')::int > (select count(*) from pg_replication_slots)
               and current_setting('max_wal_senders')::int > (select count(*) from pg_stat_replication)
               and strpos(current_setting('synchronous_standby_names'), '*') = 0
               and strpos(lower(current_setting('synchronous_standby_names')), 'walcost') = 0 as replication`)
  } catch (error) {
    throw fromServerError(error, 'reading server settings')
  }
  if (!row) throw new WalcostError('QUERY_FAILED', 'reading server settings returned nothing.')
  const versionNum = Number(row.version_num)
  if (versionNum < MIN_VERSION_NUM) {
    throw new WalcostError(
      'UNSUPPORTED_SERVER',
      `PostgreSQL ${row.version} is not supported: walcost needs PostgreSQL 14 or later (pg_stat_wal).`,
    )
  }
  const readWal =
    session.readDataFile !== undefined || (session.copyOut !== undefined && (row.superuser || row.read_binary_file))
  return {
    facts: {
      version: row.version,
      versionNum,
      fullPageWrites: row.full_page_writes === 'on',
      walCompression: row.wal_compression,
      walLevel: row.wal_level,
      walLogHints: row.wal_log_hints === 'on',
      dataChecksums: row.data_checksums === 'on',
      checkpointTimeout: row.checkpoint_timeout,
      maxWalSize: row.max_wal_size,
      synchronousCommit: row.synchronous_commit,
      blockSize: Number(row.block_size),
      walSegmentSize: Number(row.wal_segment_size),
      checkpointTimeoutSeconds: Number(row.checkpoint_timeout_s),
      maxWalSizeBytes: Number(row.max_wal_size_bytes),
      sharedBuffersBytes: Number(row.shared_buffers_bytes ?? 0),
    },
    capabilities: {
      readWal,
      walBytes: readWal ? 'files' : null,
      replication: row.replication,
      replicationRefused: null,
      checkpoint: row.superuser || row.pg_checkpoint,
      walinspect: await walinspectAccess(session, row, readWal),
      forceStatsFlush: row.force_flush,
      emitMessage: row.emit_message ?? false,
      readControl: row.read_control,
      reserveWal: row.reserve_wal,
      skipWalZeroFill: row.superuser,
    },
    checkpointView: row.checkpoint_view,
  }
}

async function walinspectAccess(
  session: Session,
  row: ServerRow,
  readWal: boolean,
): Promise<Capabilities['walinspect']> {
  if (row.walinspect_schema !== null) {
    if (row.walinspect_executable || row.superuser || row.read_server_files)
      return { schema: row.walinspect_schema, temporary: false }
    return {
      unavailable:
        'pg_walinspect is installed but this role may not read WAL: GRANT pg_read_server_files TO the role (or run as a superuser)',
    }
  }
  // Asked only where it is used: reading the extensions' directory takes milliseconds.
  if (readWal)
    return { unavailable: 'pg_walinspect is not installed, and not needed: walcost reads the WAL files itself' }
  const [available] = await session.query<{ available: boolean }>(
    `select exists (select 1 from pg_available_extensions where name = 'pg_walinspect') as available`,
  )
  if (!available?.available) {
    return {
      unavailable:
        Number(row.version_num) < 150_000
          ? 'pg_walinspect needs PostgreSQL 15 or later'
          : 'the pg_walinspect extension is not available on this server (install the PostgreSQL contrib package)',
    }
  }
  // Created inside a transaction that is rolled back, so the database is left as it was.
  if (row.superuser) return { schema: TEMPORARY_WALINSPECT_SCHEMA, temporary: true }
  return {
    unavailable:
      'pg_walinspect is not installed: a superuser can run CREATE EXTENSION pg_walinspect, then GRANT pg_read_server_files TO the role',
  }
}

/**
 * Checkpoints run so far, from the view the settings found readable; null where none is. It runs
 * inside the measuring transaction too: any failure (a cancel, a lost connection) ends the work.
 */
async function readCheckpoints(session: Session, view: CheckpointView | null): Promise<ServerFacts['checkpoints']> {
  if (view === null) return null
  const [row] = await session.query<{ timed: string; requested: string; since: string | null }>(
    view === 'pg_stat_checkpointer'
      ? `select num_timed::text as timed, num_requested::text as requested, stats_reset::text as since from pg_stat_checkpointer`
      : `select checkpoints_timed::text as timed, checkpoints_req::text as requested, stats_reset::text as since from pg_stat_bgwriter`,
  )
  return row ? { timed: Number(row.timed), requested: Number(row.requested), since: row.since } : null
}
