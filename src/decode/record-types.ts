/**
 * WAL record type names exactly as PostgreSQL's own tools print them, so that numbers walcost computes
 * by parsing WAL itself can be keyed and compared row for row with `pg_get_wal_stats(..., true)`
 * (pg_walinspect, PG 15+) and `pg_waldump --stats=record` (PG 14).
 *
 * Sources, PostgreSQL branches REL_14_STABLE .. REL_18_STABLE:
 * - src/include/access/rmgrlist.h: builtin resource manager ids and names.
 * - src/backend/access/rmgrdesc/*desc.c: the `*_identify(uint8 info)` functions.
 * - info constants: src/include/catalog/pg_control.h (XLOG), access/xact.h, catalog/storage_xlog.h,
 *   access/clog.h, commands/dbcommands_xlog.h, commands/tablespace.h, access/multixact.h,
 *   utils/relmapper.h, storage/standbydefs.h, access/heapam_xlog.h, access/nbtxlog.h,
 *   access/hash_xlog.h, access/ginxlog.h, access/gistxlog.h, commands/sequence.h, access/spgxlog.h,
 *   access/brin_xlog.h, access/commit_ts.h, replication/origin.h, access/generic_xlog.h,
 *   replication/message.h (all under src/include).
 * - Stats grouping: src/backend/access/transam/xlogstats.c XLogRecStoreStats and
 *   contrib/pg_walinspect/pg_walinspect.c GetXLogSummaryStats (15+); src/bin/pg_waldump/pg_waldump.c
 *   XLogDumpCountRecord and XLogDumpDisplayStats (14).
 * - Per-record naming: pg_walinspect.c GetWALRecordInfo (15+), pg_waldump.c XLogDumpDisplayRecord.
 *
 * The tables were checked against the compiled identify functions of PostgreSQL 14.23, 15.18, 16.14,
 * 17.10 and 18.4 for every resource manager and every one of the 256 xl_info values.
 */

/** src/include/access/rmgr.h: ids from here on are custom resource managers (PG 15+). */
const RM_MIN_CUSTOM_ID = 128
const RM_XACT_ID = 1
const OLDEST_MAJOR = 14
const NEWEST_MAJOR = 18

interface RecordType {
  /** The rmgr's part of xl_info (its high four bits) that the identify function maps to `name`. */
  readonly info: number
  readonly name: string
  /** First major whose identify function knows this value; absent means every supported major. */
  readonly since?: number
  /** Last major whose identify function knows this value; absent means still current. */
  readonly until?: number
}

interface ResourceManager {
  /** rm_name from rmgrlist.h; pg_walinspect's resource_manager column prints it verbatim. */
  readonly name: string
  /**
   * The bits of xl_info the identify function switches on. Most strip XLR_INFO_MASK (0xf0); xact
   * also strips XLOG_XACT_HAS_INFO (0x70); commit_ts and replorigin switch on the raw byte (0xff),
   * so for them a record with a low flag bit set is UNKNOWN per record but named in the stats.
   */
  readonly identifyMask: number
  readonly types: readonly RecordType[]
  /** generic_identify ignores its argument and always answers this. */
  readonly anyInfo?: string
}

/** Identify functions that strip only XLR_INFO_MASK, the common case. */
const RMGR_MASK = 0xf0

/** Indexed by RmgrId, in rmgrlist.h order (unchanged from 14 through 18). */
const RMGRS: readonly ResourceManager[] = [
  {
    // xlogdesc.c xlog_identify; pg_control.h, which notes 0xC0 was only used in 9.5-11, so every
    // supported major leaves it UNKNOWN.
    name: 'XLOG',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'CHECKPOINT_SHUTDOWN' },
      { info: 0x10, name: 'CHECKPOINT_ONLINE' },
      { info: 0x20, name: 'NOOP' },
      { info: 0x30, name: 'NEXTOID' },
      { info: 0x40, name: 'SWITCH' },
      { info: 0x50, name: 'BACKUP_END' },
      { info: 0x60, name: 'PARAMETER_CHANGE' },
      { info: 0x70, name: 'RESTORE_POINT' },
      { info: 0x80, name: 'FPW_CHANGE' },
      { info: 0x90, name: 'END_OF_RECOVERY' },
      { info: 0xa0, name: 'FPI_FOR_HINT' },
      { info: 0xb0, name: 'FPI' },
      // Back-patched into 14 around the 14.0 release (fix for torn continuation records), so a very
      // early 14.x may print UNKNOWN (d0); 14.23 names it.
      { info: 0xd0, name: 'OVERWRITE_CONTRECORD' },
      // XLOG_CHECKPOINT_REDO, added in 17 for WAL summarization.
      { info: 0xe0, name: 'CHECKPOINT_REDO', since: 17 },
    ],
  },
  {
    // xactdesc.c xact_identify switches on info & XLOG_XACT_OPMASK (0x70): bit 0x80
    // (XLOG_XACT_HAS_INFO) only says an xinfo word follows, so COMMIT with or without it is COMMIT.
    name: 'Transaction',
    identifyMask: 0x70,
    types: [
      { info: 0x00, name: 'COMMIT' },
      { info: 0x10, name: 'PREPARE' },
      { info: 0x20, name: 'ABORT' },
      { info: 0x30, name: 'COMMIT_PREPARED' },
      { info: 0x40, name: 'ABORT_PREPARED' },
      { info: 0x50, name: 'ASSIGNMENT' },
      // The constant is XLOG_XACT_INVALIDATIONS, but xact_identify spells it in the singular.
      { info: 0x60, name: 'INVALIDATION' },
    ],
  },
  {
    // smgrdesc.c smgr_identify; storage_xlog.h. 0x00 is unused.
    name: 'Storage',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x10, name: 'CREATE' },
      { info: 0x20, name: 'TRUNCATE' },
    ],
  },
  {
    // clogdesc.c clog_identify; clog.h.
    name: 'CLOG',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'ZEROPAGE' },
      { info: 0x10, name: 'TRUNCATE' },
    ],
  },
  {
    // dbasedesc.c dbase_identify; dbcommands_xlog.h. 15 added the WAL_LOG strategy for CREATE
    // DATABASE, renumbering XLOG_DBASE_CREATE into CREATE_FILE_COPY and moving DROP to 0x20.
    name: 'Database',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'CREATE', until: 14 },
      { info: 0x10, name: 'DROP', until: 14 },
      { info: 0x00, name: 'CREATE_FILE_COPY', since: 15 },
      { info: 0x10, name: 'CREATE_WAL_LOG', since: 15 },
      { info: 0x20, name: 'DROP', since: 15 },
    ],
  },
  {
    // tblspcdesc.c tblspc_identify; commands/tablespace.h.
    name: 'Tablespace',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'CREATE' },
      { info: 0x10, name: 'DROP' },
    ],
  },
  {
    // mxactdesc.c multixact_identify; multixact.h.
    name: 'MultiXact',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'ZERO_OFF_PAGE' },
      { info: 0x10, name: 'ZERO_MEM_PAGE' },
      { info: 0x20, name: 'CREATE_ID' },
      { info: 0x30, name: 'TRUNCATE_ID' },
    ],
  },
  {
    // relmapdesc.c relmap_identify; relmapper.h.
    name: 'RelMap',
    identifyMask: RMGR_MASK,
    types: [{ info: 0x00, name: 'UPDATE' }],
  },
  {
    // standbydesc.c standby_identify; standbydefs.h.
    name: 'Standby',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'LOCK' },
      { info: 0x10, name: 'RUNNING_XACTS' },
      { info: 0x20, name: 'INVALIDATIONS' },
    ],
  },
  {
    // heapdesc.c heap2_identify; heapam_xlog.h. 17 merged pruning, vacuuming and freezing into one
    // record kind distinguished by who emitted it, reusing the three old slots.
    name: 'Heap2',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'REWRITE' },
      { info: 0x10, name: 'PRUNE', until: 16 },
      { info: 0x20, name: 'VACUUM', until: 16 },
      { info: 0x30, name: 'FREEZE_PAGE', until: 16 },
      { info: 0x10, name: 'PRUNE_ON_ACCESS', since: 17 },
      { info: 0x20, name: 'PRUNE_VACUUM_SCAN', since: 17 },
      { info: 0x30, name: 'PRUNE_VACUUM_CLEANUP', since: 17 },
      { info: 0x40, name: 'VISIBLE' },
      { info: 0x50, name: 'MULTI_INSERT' },
      { info: 0x60, name: 'LOCK_UPDATED' },
      { info: 0x70, name: 'NEW_CID' },
      // XLOG_HEAP_INIT_PAGE (0x80) is only named where the record can start a fresh page.
      { info: 0xd0, name: 'MULTI_INSERT+INIT' },
    ],
  },
  {
    // heapdesc.c heap_identify; heapam_xlog.h. 0x80 is XLOG_HEAP_INIT_PAGE; combinations that
    // heap_identify does not list (DELETE|INIT etc.) stay UNKNOWN.
    name: 'Heap',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'INSERT' },
      { info: 0x10, name: 'DELETE' },
      { info: 0x20, name: 'UPDATE' },
      { info: 0x30, name: 'TRUNCATE' },
      { info: 0x40, name: 'HOT_UPDATE' },
      { info: 0x50, name: 'HEAP_CONFIRM' },
      { info: 0x60, name: 'LOCK' },
      { info: 0x70, name: 'INPLACE' },
      { info: 0x80, name: 'INSERT+INIT' },
      { info: 0xa0, name: 'UPDATE+INIT' },
      { info: 0xc0, name: 'HOT_UPDATE+INIT' },
    ],
  },
  {
    // nbtdesc.c btree_identify; nbtxlog.h.
    name: 'Btree',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'INSERT_LEAF' },
      { info: 0x10, name: 'INSERT_UPPER' },
      { info: 0x20, name: 'INSERT_META' },
      { info: 0x30, name: 'SPLIT_L' },
      { info: 0x40, name: 'SPLIT_R' },
      { info: 0x50, name: 'INSERT_POST' },
      { info: 0x60, name: 'DEDUP' },
      { info: 0x70, name: 'DELETE' },
      { info: 0x80, name: 'UNLINK_PAGE' },
      { info: 0x90, name: 'UNLINK_PAGE_META' },
      { info: 0xa0, name: 'NEWROOT' },
      { info: 0xb0, name: 'MARK_PAGE_HALFDEAD' },
      { info: 0xc0, name: 'VACUUM' },
      { info: 0xd0, name: 'REUSE_PAGE' },
      { info: 0xe0, name: 'META_CLEANUP' },
    ],
  },
  {
    // hashdesc.c hash_identify; hash_xlog.h.
    name: 'Hash',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'INIT_META_PAGE' },
      { info: 0x10, name: 'INIT_BITMAP_PAGE' },
      { info: 0x20, name: 'INSERT' },
      { info: 0x30, name: 'ADD_OVFL_PAGE' },
      { info: 0x40, name: 'SPLIT_ALLOCATE_PAGE' },
      { info: 0x50, name: 'SPLIT_PAGE' },
      { info: 0x60, name: 'SPLIT_COMPLETE' },
      { info: 0x70, name: 'MOVE_PAGE_CONTENTS' },
      { info: 0x80, name: 'SQUEEZE_PAGE' },
      { info: 0x90, name: 'DELETE' },
      { info: 0xa0, name: 'SPLIT_CLEANUP' },
      { info: 0xb0, name: 'UPDATE_META_PAGE' },
      { info: 0xc0, name: 'VACUUM_ONE_PAGE' },
    ],
  },
  {
    // gindesc.c gin_identify; ginxlog.h. 0x00 (the old CREATE_INDEX) is no longer logged.
    name: 'Gin',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x10, name: 'CREATE_PTREE' },
      { info: 0x20, name: 'INSERT' },
      { info: 0x30, name: 'SPLIT' },
      { info: 0x40, name: 'VACUUM_PAGE' },
      { info: 0x50, name: 'DELETE_PAGE' },
      { info: 0x60, name: 'UPDATE_META_PAGE' },
      { info: 0x70, name: 'INSERT_LISTPAGE' },
      { info: 0x80, name: 'DELETE_LISTPAGE' },
      { info: 0x90, name: 'VACUUM_DATA_LEAF_PAGE' },
    ],
  },
  {
    // gistdesc.c gist_identify; gistxlog.h. 0x40 and 0x50 are retired values.
    name: 'Gist',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'PAGE_UPDATE' },
      { info: 0x10, name: 'DELETE' },
      { info: 0x20, name: 'PAGE_REUSE' },
      { info: 0x30, name: 'PAGE_SPLIT' },
      { info: 0x60, name: 'PAGE_DELETE' },
      { info: 0x70, name: 'ASSIGN_LSN' },
    ],
  },
  {
    // seqdesc.c seq_identify; commands/sequence.h.
    name: 'Sequence',
    identifyMask: RMGR_MASK,
    types: [{ info: 0x00, name: 'LOG' }],
  },
  {
    // spgdesc.c spg_identify; spgxlog.h. 0x00 (the old CREATE_INDEX) is no longer logged.
    name: 'SPGist',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x10, name: 'ADD_LEAF' },
      { info: 0x20, name: 'MOVE_LEAFS' },
      { info: 0x30, name: 'ADD_NODE' },
      { info: 0x40, name: 'SPLIT_TUPLE' },
      { info: 0x50, name: 'PICKSPLIT' },
      { info: 0x60, name: 'VACUUM_LEAF' },
      { info: 0x70, name: 'VACUUM_ROOT' },
      { info: 0x80, name: 'VACUUM_REDIRECT' },
    ],
  },
  {
    // brindesc.c brin_identify; brin_xlog.h. 0x80 is XLOG_BRIN_INIT_PAGE.
    name: 'BRIN',
    identifyMask: RMGR_MASK,
    types: [
      { info: 0x00, name: 'CREATE_INDEX' },
      { info: 0x10, name: 'INSERT' },
      { info: 0x20, name: 'UPDATE' },
      { info: 0x30, name: 'SAMEPAGE_UPDATE' },
      { info: 0x40, name: 'REVMAP_EXTEND' },
      { info: 0x50, name: 'DESUMMARIZE' },
      { info: 0x90, name: 'INSERT+INIT' },
      { info: 0xa0, name: 'UPDATE+INIT' },
    ],
  },
  {
    // committsdesc.c commit_ts_identify does `switch (info)` without stripping XLR_INFO_MASK.
    name: 'CommitTs',
    identifyMask: 0xff,
    types: [
      { info: 0x00, name: 'ZEROPAGE' },
      { info: 0x10, name: 'TRUNCATE' },
    ],
  },
  {
    // replorigindesc.c replorigin_identify also switches on the raw info byte.
    name: 'ReplicationOrigin',
    identifyMask: 0xff,
    types: [
      { info: 0x00, name: 'SET' },
      { info: 0x10, name: 'DROP' },
    ],
  },
  {
    // genericdesc.c generic_identify returns "Generic" whatever the info.
    name: 'Generic',
    identifyMask: RMGR_MASK,
    types: [],
    anyInfo: 'Generic',
  },
  {
    // logicalmsgdesc.c logicalmsg_identify; message.h.
    name: 'LogicalMessage',
    identifyMask: RMGR_MASK,
    types: [{ info: 0x00, name: 'MESSAGE' }],
  },
]

/**
 * Builtin resource manager names indexed by RmgrId (xl_rmid), as rmgrlist.h spells them and as
 * pg_walinspect prints them in its resource_manager column. The same 22 on every major from 14 to 18.
 */
export const RESOURCE_MANAGERS: readonly string[] = Object.freeze(RMGRS.map((rmgr) => rmgr.name))

function checkArguments(rmid: number, info: number, majorVersion: number): void {
  if (!Number.isInteger(majorVersion) || majorVersion < OLDEST_MAJOR || majorVersion > NEWEST_MAJOR) {
    // A newer major may renumber record types (as 15 and 17 did); guessing would mislabel silently.
    throw new RangeError(
      `record type names are known for PostgreSQL ${OLDEST_MAJOR}-${NEWEST_MAJOR}, not ${majorVersion}`,
    )
  }
  if (!Number.isInteger(info) || info < 0 || info > 0xff) {
    throw new RangeError(`xl_info must be a byte, got ${info}`)
  }
  const builtin = Number.isInteger(rmid) && rmid >= 0 && rmid < RMGRS.length
  const custom = majorVersion >= 15 && Number.isInteger(rmid) && rmid >= RM_MIN_CUSTOM_ID && rmid <= 0xff
  if (!builtin && !custom) {
    // PostgreSQL's xlogreader rejects such a record ("invalid resource manager ID"), so no name exists.
    throw new RangeError(`invalid resource manager ID ${rmid} for PostgreSQL ${majorVersion}`)
  }
}

/** Mirrors the C `*_identify(info)` call; undefined where C returns NULL. */
function identify(rmgr: ResourceManager, info: number, majorVersion: number): string | undefined {
  if (rmgr.anyInfo !== undefined) return rmgr.anyInfo
  const key = info & rmgr.identifyMask
  const hit = rmgr.types.find(
    (t) =>
      t.info === key &&
      (t.since === undefined || majorVersion >= t.since) &&
      (t.until === undefined || majorVersion <= t.until),
  )
  return hit?.name
}

/**
 * Name for custom resource managers (PG 15+). walcost cannot load the extension that registered
 * one, so it answers what pg_waldump does for an rmgr it cannot load (src/bin/pg_waldump/rmgrdesc.c:
 * name "custom%03d", identify returning NULL). pg_walinspect itself would instead omit the row from
 * pg_get_wal_stats when the rmgr is not loaded, and use the extension's own names when it is.
 */
function customRmgrName(rmid: number): string {
  return `custom${String(rmid).padStart(3, '0')}`
}

/**
 * The `resource_manager/record_type` string pg_get_wal_stats(start, end, per_record => true) prints
 * for a record with this xl_rmid and xl_info on `majorVersion` (on 14, pg_waldump --stats=record's
 * Type column). The stats code groups records by `info >> 4`, ANDed with 0x07 for Transaction so the
 * XLOG_XACT_HAS_INFO flag does not split a type in two, then names the group with
 * `rm_identify(group << 4)`, falling back to `UNKNOWN (%x)` of that same value.
 *
 * @throws RangeError for a major outside 14-18, an info outside 0-255, or an rmid PostgreSQL's WAL
 * reader would reject on that major (22-127 always; 128-255 before 15, which had no custom rmgrs).
 */
export function recordTypeName(rmid: number, info: number, majorVersion: number): string {
  checkArguments(rmid, info, majorVersion)
  let group = info >> 4
  if (rmid === RM_XACT_ID) group &= 0x07
  const groupInfo = group << 4
  const rmgr = RMGRS[rmid]
  const id = rmgr === undefined ? undefined : identify(rmgr, groupInfo, majorVersion)
  const rmName = rmgr === undefined ? customRmgrName(rmid) : rmgr.name
  return `${rmName}/${id ?? `UNKNOWN (${groupInfo.toString(16)})`}`
}
