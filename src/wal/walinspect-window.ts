import { fromServerError, sqlStateOf, WalcostError } from '../core/errors.js'
import type { FileLocator } from '../decode/xact-record.js'
import { fileKey } from '../decode/xact-record.js'
import type { Session } from '../driver/types.js'
import type { RecordTypeTotals, RecordTypeWal } from './attribution.js'
import type { FileWal, FpiReasons, UnattributedKind, UnattributedWal, WindowWal } from './observe-tally.js'
import { removedSegmentError } from './segments.js'
import type { WalPosition } from './snapshot.js'

interface FileTypeRow extends Record<string, unknown> {
  tablespace: string
  database: string
  relfilenode: string
  type: string
  records: string
  bytes: string
  fpi_count: string
  fpi_bytes: string
  applied_count: string
  applied_bytes: string
}

interface RecordSummary {
  types: Array<{
    rm: string
    type: string
    blocks: boolean
    records: number
    bytes: number
    fpi_bytes: number
    footprint: number
    aligned: number
  }> | null
  ends: Array<{ type: string; description: string }> | null
  created: string[] | null
  aborted_bytes: number | null
}

// The split ObserveTally makes of the bytes, made by the server from pg_get_wal_block_info (16+): a
// record's bytes without images go to its first block's file (block ids rise within a record),
// each image to its own block's file.
const filesSql = (schema: string) => `
  with block as (
    select start_lsn, block_id, reltablespace, reldatabase, relfilenode, resource_manager || '/' || record_type as type,
           record_length, coalesce(block_fpi_length, 0) as fpi_length, block_fpi_info
      from ${schema}.pg_get_wal_block_info($1::pg_lsn, $2::pg_lsn, false)),
  placed as (
    select *, block_id = min(block_id) over record as first, record_length - sum(fpi_length) over record as own
      from block window record as (partition by start_lsn))
  select reltablespace::text as tablespace, reldatabase::text as database, relfilenode::text as relfilenode, type,
         count(*) filter (where first)::text as records,
         (coalesce(sum(own) filter (where first), 0) + sum(fpi_length))::text as bytes,
         count(*) filter (where block_fpi_info is not null)::text as fpi_count,
         sum(fpi_length)::text as fpi_bytes,
         count(*) filter (where 'APPLY' = any (block_fpi_info))::text as applied_count,
         coalesce(sum(fpi_length) filter (where 'APPLY' = any (block_fpi_info)), 0)::text as applied_bytes
    from placed group by 1, 2, 3, 4`

// Every record by type, with what occupies the WAL besides (end_lsn - start_lsn is a record's
// footprint: its alignment, the page headers it crosses, a switch's rest of the segment); the
// transactions' ends and the files created, from their descriptions (xactdesc.c, smgrdesc.c); and
// the WAL of the transactions and subtransactions that aborted in the window.
const recordsSql = (schema: string) => `
  with record as materialized (
    select xid, resource_manager, record_type, coalesce(block_ref, '') <> '' as blocks, record_length,
           coalesce(fpi_length, 0) as fpi_length, end_lsn - start_lsn as footprint, description
      from ${schema}.pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)),
  abort as (
    select xid, description from record where resource_manager = 'Transaction' and record_type in ('ABORT', 'ABORT_PREPARED')),
  aborted as (
    select xid::text as xid from abort
    union
    select sub from abort, regexp_split_to_table(substring(description from 'subxacts:((?: [0-9]+)+)'), ' ') as sub where sub <> '')
  select json_build_object(
    'types', (select json_agg(grouped) from (
       select resource_manager as rm, record_type as type, blocks, count(*) as records, sum(record_length) as bytes,
              sum(fpi_length) as fpi_bytes, sum(footprint) as footprint, sum((record_length + 7) / 8 * 8) as aligned
         from record group by 1, 2, 3) as grouped),
    'ends', (select json_agg(json_build_object('type', record_type, 'description', description)) from record
              where resource_manager = 'Transaction' and record_type in ('COMMIT', 'COMMIT_PREPARED', 'ABORT', 'ABORT_PREPARED')),
    'created', (select json_agg(description) from record where resource_manager = 'Storage' and record_type = 'CREATE'),
    'aborted_bytes', (select sum(footprint) from record
                       where xid::text in (select xid from aborted)
                          or (xid::text = '0' and resource_manager = 'Transaction' and record_type = 'ABORT_PREPARED'))
  ) as summary`

const DEFAULT_TABLESPACE = 1663
const GLOBAL_TABLESPACE = 1664

/**
 * A relation file's locator from the path a record's description gives (relpathperm): main forks
 * only (a fork's path ends in _fsm, _vm or _init), and temporary relations are no file of ours.
 */
function fileOfPath(path: string): FileLocator | null {
  let match = /^base\/(\d+)\/(\d+)$/.exec(path)
  if (match) return { tablespace: DEFAULT_TABLESPACE, database: Number(match[1]), relNumber: Number(match[2]) }
  match = /^global\/(\d+)$/.exec(path)
  if (match) return { tablespace: GLOBAL_TABLESPACE, database: 0, relNumber: Number(match[1]) }
  match = /^pg_tblspc\/(\d+)\/[^/]+\/(\d+)\/(\d+)$/.exec(path)
  if (match) return { tablespace: Number(match[1]), database: Number(match[2]), relNumber: Number(match[3]) }
  return null
}

/** The files a commit or abort's description says it deletes ("; rels: base/5/16384 base/5/16387"). */
function droppedFiles(description: string): string[] {
  const list = /rels:((?: [^ ;]+)+)/.exec(description)?.[1] ?? ''
  return list
    .split(' ')
    .map((path) => fileOfPath(path))
    .filter((file) => file !== null)
    .map(fileKey)
}

function unattributedKind(rm: string, type: string): UnattributedKind {
  if (rm === 'XLOG')
    return ['CHECKPOINT_ONLINE', 'CHECKPOINT_REDO', 'CHECKPOINT_SHUTDOWN'].includes(type) ? 'checkpoints' : 'xlog'
  const kinds: Record<string, UnattributedKind> = {
    Transaction: 'transactions',
    Storage: 'storage',
    Standby: 'standby',
    LogicalMessage: 'messages',
  }
  return kinds[rm] ?? 'other'
}

const byBytes = <T extends { bytes: number }>(parts: T[]): T[] => parts.sort((a, b) => b.bytes - a.bytes)

/**
 * A window's WAL split as walcost's reader splits it (observe-tally.ts), read by pg_walinspect on
 * the server, for a role that may call pg_walinspect's functions (pg_read_server_files) but not
 * read the files: the same WindowWal, from two passes over the window on the server. The window
 * must be flushed.
 */
export async function windowWithWalinspect(
  session: Session,
  schema: string,
  start: WalPosition,
  end: WalPosition,
): Promise<WindowWal> {
  let fileRows: FileTypeRow[]
  let summary: RecordSummary
  try {
    fileRows = await session.query<FileTypeRow>(filesSql(schema), [start.lsn, end.lsn])
    const [row] = await session.query<{ summary: RecordSummary }>(recordsSql(schema), [start.lsn, end.lsn])
    if (!row) throw new WalcostError('QUERY_FAILED', 'pg_walinspect returned no summary of the window.')
    summary = row.summary
  } catch (error) {
    // undefined_file: a checkpoint removed a segment of the window before it was read.
    if (sqlStateOf(error) === '58P01') throw removedSegmentError(error)
    throw fromServerError(error, 'reading the WAL with pg_walinspect')
  }
  const dropped = new Set((summary.ends ?? []).flatMap((end) => droppedFiles(end.description)))
  const created = new Set(
    (summary.created ?? [])
      .map((path) => fileOfPath(path))
      .filter((file) => file !== null)
      .map(fileKey),
  )
  const fpiReasons: FpiReasons = {
    afterCheckpoint: { count: 0, bytes: 0 },
    hintBits: { count: 0, bytes: 0 },
    other: { count: 0, bytes: 0 },
  }
  const files = new Map<string, FileWal>()
  let fpiCount = 0
  for (const row of fileRows) {
    const locator = {
      tablespace: Number(row.tablespace),
      database: Number(row.database),
      relNumber: Number(row.relfilenode),
    }
    const key = fileKey(locator)
    const file = files.get(key) ?? {
      ...locator,
      records: 0,
      bytes: 0,
      fpiCount: 0,
      fpiBytes: 0,
      recordTypes: [],
      created: created.has(key),
      dropped: dropped.has(key),
    }
    files.set(key, file)
    const type: RecordTypeWal = {
      type: row.type,
      records: Number(row.records),
      bytes: Number(row.bytes),
      fpiBytes: Number(row.fpi_bytes),
      fpiCount: Number(row.fpi_count),
    }
    file.recordTypes.push(type)
    file.records += type.records
    file.bytes += type.bytes
    file.fpiCount += type.fpiCount
    file.fpiBytes += type.fpiBytes
    fpiCount += type.fpiCount
    if (type.fpiCount === 0) continue
    const applied = { count: Number(row.applied_count), bytes: Number(row.applied_bytes) }
    const imageOnly = row.type.startsWith('XLOG/')
    const reason = row.type === 'XLOG/FPI_FOR_HINT' ? fpiReasons.hintBits : fpiReasons.other
    if (!imageOnly) {
      fpiReasons.afterCheckpoint.count += applied.count
      fpiReasons.afterCheckpoint.bytes += applied.bytes
    }
    reason.count += type.fpiCount - (imageOnly ? 0 : applied.count)
    reason.bytes += type.fpiBytes - (imageOnly ? 0 : applied.bytes)
  }
  for (const file of files.values()) byBytes(file.recordTypes)

  const unattributed = new Map<UnattributedKind, UnattributedWal>()
  const byType = new Map<string, RecordTypeTotals>()
  let records = 0
  let aligned = 0
  let alignment = 0
  let switchPadding = 0
  let checkpointRecords = 0
  for (const group of summary.types ?? []) {
    const name = `${group.rm}/${group.type}`
    records += group.records
    aligned += group.aligned
    alignment += group.aligned - group.bytes
    if (name === 'XLOG/SWITCH') switchPadding += group.footprint - group.aligned
    if (name === 'XLOG/CHECKPOINT_ONLINE' || name === 'XLOG/CHECKPOINT_REDO') checkpointRecords += group.records
    const total = byType.get(name) ?? { records: 0, recordBytes: 0, fpiBytes: 0 }
    total.records += group.records
    total.recordBytes += group.bytes - group.fpi_bytes
    total.fpiBytes += group.fpi_bytes
    byType.set(name, total)
    if (group.blocks) continue
    const kind = unattributedKind(group.rm, group.type)
    const part = unattributed.get(kind) ?? { kind, records: 0, bytes: 0, recordTypes: [] }
    part.records += group.records
    part.bytes += group.bytes
    part.recordTypes.push({ type: name, records: group.records, bytes: group.bytes, fpiCount: 0, fpiBytes: 0 })
    unattributed.set(kind, part)
  }
  for (const part of unattributed.values()) byBytes(part.recordTypes)
  const padding = (kind: UnattributedKind, bytes: number): UnattributedWal[] =>
    bytes > 0 ? [{ kind, records: 0, bytes, recordTypes: [] }] : []
  const ends = summary.ends ?? []
  return {
    records,
    fpiCount,
    files: byBytes([...files.values()]),
    unattributed: byBytes([
      ...unattributed.values(),
      ...padding('alignment', alignment),
      ...padding('switch padding', switchPadding),
      ...padding('page headers', end.bytes - start.bytes - aligned - switchPadding),
    ]),
    fpiReasons,
    transactions: {
      committed: ends.filter((end) => end.type.startsWith('COMMIT')).length,
      aborted: ends.filter((end) => end.type.startsWith('ABORT')).length,
      abortedBytes: summary.aborted_bytes ?? 0,
    },
    checkpointRecords,
    byType,
  }
}
