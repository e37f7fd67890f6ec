// biome-ignore-all lint/style/noNonNullAssertion: blocks[i] exists for every i below blockCount (the reader fills them); checks in the per-record loop would cost time for nothing.
import type { Session } from '../driver/types.js'
import { WalcostError } from '../errors.js'
import { WalReader, type WalRecord } from './reader.js'
import { recordTypeName } from './record-types.js'
import { walBytes } from './segments.js'
import type { WalPosition } from './snapshot.js'

/** WAL of one kind of record (e.g. `Heap/INSERT`, `Btree/SPLIT_R`) written to one relation. */
export interface RecordTypeWal {
  /** resource manager / record type, as pg_get_wal_stats names them. */
  type: string
  /** Records whose first block reference is this relation. */
  records: number
  /** Those records' bytes without images, plus the images of this relation's blocks. */
  bytes: number
  /** Image bytes of this relation's blocks. */
  fpiBytes: number
  fpiCount: number
}

/** Every record of one type in the window, ours or not, counted as pg_get_wal_stats counts them. */
export interface RecordTypeTotals {
  records: number
  /** xl_tot_len minus image bytes. */
  recordBytes: number
  fpiBytes: number
}

export interface WindowAttribution {
  /** Our transaction's records, by relfilenode ('' for records with no block reference). */
  ours: Map<string, RecordTypeWal[]>
  /** Every record in the window, ours or not, with its alignment (and an XLOG_SWITCH's padding). */
  alignedBytes: number
  /** Our records, likewise. */
  oursAlignedBytes: number
  /** Checkpoint records in the window (CHECKPOINT_REDO marks a start on 17+, CHECKPOINT_ONLINE an end). */
  checkpointRecords: number
  /** Every record in the window by type, for the cross-check against pg_get_wal_stats; the reader only. */
  byType: Map<string, RecordTypeTotals> | null
  /**
   * Records of other transactions (autovacuum, other sessions) by relfilenode of each block they
   * change: on our relations, they changed pages first and took images the batch would have taken.
   * The reader only.
   */
  othersByRelation: Map<string, number> | null
  /**
   * Our non-HOT updates (Heap/UPDATE) whose new tuple went to another page than the old one (the
   * record names two blocks), by relfilenode: those found no room. The reader only.
   */
  updatesToNewPage: Map<string, number> | null
}

/** What the reader needs to know of the server. */
export interface WalLayout {
  major: number
  blockSize: number
  segmentSize: number
}

const RM_XLOG_ID = 0
const RM_HEAP_ID = 10
/** XLOG_HEAP_UPDATE within XLOG_HEAP_OPMASK (heapam_xlog.h). */
const XLOG_HEAP_UPDATE = 0x20
const XLOG_HEAP_OPMASK = 0x70
const XLOG_CHECKPOINT_ONLINE = 0x10
const XLOG_CHECKPOINT_REDO = 0xe0

/**
 * Reads the window's records from the WAL itself and splits them by transaction and relation: a
 * record's own bytes go to the relation of its first block reference, whatever that block's id,
 * and each image to the relation of its own block. `xids` are our transaction's ids: the top-level
 * one and those of its subtransactions.
 */
export async function readWindow(
  session: Session,
  layout: WalLayout,
  start: WalPosition,
  end: WalPosition,
  xids: readonly string[],
  verifyCrc = false,
): Promise<WindowAttribution> {
  const ourXids = new Set(xids.map(Number))
  const nameOf = (typeKey: number) => {
    try {
      return recordTypeName(typeKey >> 8, typeKey & 0xff, layout.major)
    } catch (error) {
      throw new WalcostError(
        'WAL_UNREADABLE',
        `the WAL holds a record of resource manager ${typeKey >> 8}, which PostgreSQL ${layout.major} does not have.`,
        { cause: error },
      )
    }
  }
  // Keyed by numbers while reading (rmid and info, and the relation), named once at the end.
  const totals = new Map<number, RecordTypeTotals>()
  const ours = new Map<number, RecordTypeWal>()
  const entry = (relation: number, typeKey: number) => {
    const key = relation * 65_536 + typeKey
    const wal = ours.get(key) ?? { type: '', records: 0, bytes: 0, fpiBytes: 0, fpiCount: 0 }
    ours.set(key, wal)
    return wal
  }
  const others = new Map<number, number>()
  const toNewPage = new Map<number, number>()
  let alignedBytes = 0
  let oursAlignedBytes = 0
  let checkpointRecords = 0
  const onRecord = (record: WalRecord) => {
    const typeKey = (record.rmid << 8) | record.info
    const total = totals.get(typeKey) ?? { records: 0, recordBytes: 0, fpiBytes: 0 }
    totals.set(typeKey, total)
    total.records += 1
    total.recordBytes += record.totalLength - record.imageBytes
    total.fpiBytes += record.imageBytes
    alignedBytes += record.footprint
    const xlogInfo = record.info & 0xf0
    if (
      record.rmid === RM_XLOG_ID &&
      (xlogInfo === XLOG_CHECKPOINT_ONLINE || (xlogInfo === XLOG_CHECKPOINT_REDO && layout.major >= 17))
    ) {
      checkpointRecords += 1
    }
    if (!ourXids.has(record.xid) && !(record.topLevelXid !== null && ourXids.has(record.topLevelXid))) {
      for (let i = 0; i < record.blockCount; i++) {
        const relation = record.blocks[i]!.relNumber
        others.set(relation, (others.get(relation) ?? 0) + 1)
      }
      return
    }
    oursAlignedBytes += record.footprint
    // heap_xlog_update: block 0 is the new tuple's page, block 1 the old one's when they differ.
    if (record.rmid === RM_HEAP_ID && (record.info & XLOG_HEAP_OPMASK) === XLOG_HEAP_UPDATE && record.blockCount > 1) {
      const relation = record.blocks[0]!.relNumber
      toNewPage.set(relation, (toNewPage.get(relation) ?? 0) + 1)
    }
    // -1: a record with no block reference.
    const own = entry(record.blockCount > 0 ? record.blocks[0]!.relNumber : -1, typeKey)
    own.records += 1
    own.bytes += record.totalLength - record.imageBytes
    for (let i = 0; i < record.blockCount; i++) {
      const block = record.blocks[i]!
      if (!block.hasImage) continue
      const image = entry(block.relNumber, typeKey)
      image.bytes += block.imageBytes
      image.fpiBytes += block.imageBytes
      image.fpiCount += 1
    }
  }
  const reader = new WalReader({ ...layout, verifyCrc }, start.bytes, end.bytes, onRecord)
  // Read to the stream's end, not only to the reader's: leaving a COPY before its trailer would
  // leave the connection in the middle of it. What comes after the window is a few bytes at most.
  for await (const chunk of walBytes(session, reader.readFrom, end.bytes, layout.segmentSize)) reader.push(chunk)
  reader.finish()
  return {
    ours: mergeByName(ours, nameOf),
    alignedBytes,
    oursAlignedBytes,
    checkpointRecords,
    byType: mergeTotals(totals, nameOf),
    othersByRelation: new Map([...others].map(([relation, records]) => [String(relation), records])),
    updatesToNewPage: new Map([...toNewPage].map(([relation, records]) => [String(relation), records])),
  }
}

/** Types that differ only in info bits the stats ignore share a name: their counts add up. */
function mergeTotals(
  totals: Map<number, RecordTypeTotals>,
  nameOf: (typeKey: number) => string,
): Map<string, RecordTypeTotals> {
  const byName = new Map<string, RecordTypeTotals>()
  for (const [typeKey, total] of totals) {
    const name = nameOf(typeKey)
    const merged = byName.get(name)
    if (!merged) byName.set(name, { ...total })
    else {
      merged.records += total.records
      merged.recordBytes += total.recordBytes
      merged.fpiBytes += total.fpiBytes
    }
  }
  return byName
}

function mergeByName(
  ours: Map<number, RecordTypeWal>,
  nameOf: (typeKey: number) => string,
): Map<string, RecordTypeWal[]> {
  const byRelation = new Map<string, Map<string, RecordTypeWal>>()
  for (const [key, wal] of ours) {
    const relationNumber = Math.floor(key / 65_536)
    const relation = relationNumber === -1 ? '' : String(relationNumber)
    const type = nameOf(key - relationNumber * 65_536)
    const types = byRelation.get(relation) ?? new Map()
    byRelation.set(relation, types)
    const merged = types.get(type)
    if (!merged) types.set(type, { ...wal, type })
    else {
      merged.records += wal.records
      merged.bytes += wal.bytes
      merged.fpiBytes += wal.fpiBytes
      merged.fpiCount += wal.fpiCount
    }
  }
  return new Map([...byRelation].map(([relation, types]) => [relation, [...types.values()]]))
}
