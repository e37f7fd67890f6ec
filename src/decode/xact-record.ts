// The end of a transaction as its Transaction/COMMIT or ABORT record says it (xl_xact_commit and
// xl_xact_abort in src/include/access/xact.h, read as ParseCommitRecord and ParseAbortRecord in
// src/backend/access/rmgrdesc/xactdesc.c read them, 14-18): which subtransactions ended with it,
// which relation files it dropped, and for a prepared transaction its own xid.
import { WalcostError } from '../core/errors.js'
import { formatLsn, type WalRecord } from './reader.js'

export const RM_XACT_ID = 1
const XLOG_XACT_OPMASK = 0x70
const XLOG_XACT_COMMIT = 0x00
const XLOG_XACT_ABORT = 0x20
const XLOG_XACT_COMMIT_PREPARED = 0x30
const XLOG_XACT_ABORT_PREPARED = 0x40
const XLOG_XACT_HAS_INFO = 0x80
const XINFO_HAS_DBINFO = 1 << 0
const XINFO_HAS_SUBXACTS = 1 << 1
const XINFO_HAS_RELFILELOCATORS = 1 << 2
const XINFO_HAS_INVALS = 1 << 3
const XINFO_HAS_TWOPHASE = 1 << 4
const XINFO_HAS_DROPPED_STATS = 1 << 8
/** TimestampTz xact_time, the fixed part of both records. */
const FIXED_PART = 8
const SHARED_INVALIDATION_MESSAGE = 16

/** A relation file as WAL names it: tablespace, database (0 for shared catalogs), relfilenode. */
export interface FileLocator {
  tablespace: number
  database: number
  relNumber: number
}

/** A file's locator as one string, to key maps by. */
export const fileKey = (file: FileLocator): string => `${file.tablespace}/${file.database}/${file.relNumber}`

export interface TransactionEnd {
  committed: boolean
  /** The transaction that ended: the record's own xid, or a prepared transaction's. */
  xid: number
  /** Its subtransactions that ended with it (committed ones for a commit, all for an abort). */
  subxacts: readonly number[]
  /** Relation files it dropped: at commit those it deleted, at abort those it had created. */
  dropped: readonly FileLocator[]
}

/** Most transactions end with no subtransactions and no files: one empty list for all of them. */
const NONE: readonly never[] = []

/** The end a Transaction record marks, or null for the other Transaction records (PREPARE, ASSIGNMENT, ...). */
export function transactionEnd(record: WalRecord, major: number): TransactionEnd | null {
  if (record.rmid !== RM_XACT_ID) return null
  const op = record.info & XLOG_XACT_OPMASK
  const committed = op === XLOG_XACT_COMMIT || op === XLOG_XACT_COMMIT_PREPARED
  if (!committed && op !== XLOG_XACT_ABORT && op !== XLOG_XACT_ABORT_PREPARED) return null
  if ((record.info & XLOG_XACT_HAS_INFO) === 0) return { committed, xid: record.xid, subxacts: NONE, dropped: NONE }
  const { view } = record
  const end = record.mainDataOffset + record.mainDataLength
  let at = record.mainDataOffset + FIXED_PART
  // Each part says its length before it: reading one past the record's end is a record walcost misreads.
  if (at + 4 > end) throw tooShort(record)
  const xinfo = view.getUint32(at, true)
  at += 4
  if ((xinfo & XINFO_HAS_DBINFO) !== 0) at += 8
  let subxacts: readonly number[] = NONE
  if ((xinfo & XINFO_HAS_SUBXACTS) !== 0) {
    const count = at + 4 <= end ? view.getInt32(at, true) : -1
    at += 4
    if (count < 0 || at + 4 * count > end) throw tooShort(record)
    subxacts = Array.from({ length: count }, (_, i) => view.getUint32(at + 4 * i, true))
    at += 4 * count
  }
  let dropped: readonly FileLocator[] = NONE
  if ((xinfo & XINFO_HAS_RELFILELOCATORS) !== 0) {
    const count = at + 4 <= end ? view.getInt32(at, true) : -1
    at += 4
    if (count < 0 || at + 12 * count > end) throw tooShort(record)
    dropped = Array.from({ length: count }, (_, i) => ({
      tablespace: view.getUint32(at + 12 * i, true),
      database: view.getUint32(at + 12 * i + 4, true),
      relNumber: view.getUint32(at + 12 * i + 8, true),
    }))
    at += 12 * count
  }
  let xid = record.xid
  if ((xinfo & XINFO_HAS_TWOPHASE) !== 0) {
    // Between the files and the prepared xid: dropped statistics (15+; 18 widened the object id to
    // 64 bits) and, in a commit only, invalidation messages.
    if ((xinfo & XINFO_HAS_DROPPED_STATS) !== 0 && at + 4 <= end)
      at += 4 + view.getInt32(at, true) * (major >= 18 ? 16 : 12)
    if (committed && (xinfo & XINFO_HAS_INVALS) !== 0 && at + 4 <= end)
      at += 4 + view.getInt32(at, true) * SHARED_INVALIDATION_MESSAGE
    if (at + 4 > end) throw tooShort(record)
    xid = view.getUint32(at, true)
  }
  return { committed, xid, subxacts, dropped }
}

function tooShort(record: WalRecord): WalcostError {
  return new WalcostError(
    'WAL_UNREADABLE',
    `the WAL could not be read back: the transaction record at ${formatLsn(record.lsn)} is shorter than its flags say. Nothing was reported from it; report this if it repeats.`,
  )
}
