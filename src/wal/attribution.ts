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
}

/** What the reader needs to know of the server. */
export interface WalLayout {
  major: number
  blockSize: number
  segmentSize: number
}

const RM_XLOG_ID = 0
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
  const names = new Map<number, string>()
  const nameOf = (rmid: number, info: number) => {
    const key = (rmid << 8) | info
    let name = names.get(key)
    if (name === undefined) {
      try {
        name = recordTypeName(rmid, info, layout.major)
      } catch (error) {
        throw new WalcostError('WAL_UNREADABLE', `the WAL holds a record of resource manager ${rmid}, which PostgreSQL ${layout.major} does not have.`, { cause: error })
      }
      names.set(key, name)
    }
    return name
  }
  const ours = new Map<string, Map<string, RecordTypeWal>>()
  const entry = (relation: string, type: string) => {
    let types = ours.get(relation)
    if (!types) ours.set(relation, (types = new Map()))
    let wal = types.get(type)
    if (!wal) types.set(type, (wal = { type, records: 0, bytes: 0, fpiBytes: 0, fpiCount: 0 }))
    return wal
  }
  const attribution: WindowAttribution = { ours: new Map(), alignedBytes: 0, oursAlignedBytes: 0, checkpointRecords: 0, byType: new Map() }
  const onRecord = (record: WalRecord) => {
    const type = nameOf(record.rmid, record.info)
    const totals = attribution.byType!.get(type) ?? { records: 0, recordBytes: 0, fpiBytes: 0 }
    totals.records += 1
    totals.recordBytes += record.totalLength - record.imageBytes
    totals.fpiBytes += record.imageBytes
    attribution.byType!.set(type, totals)
    attribution.alignedBytes += record.footprint
    const xlogInfo = record.info & 0xf0
    if (record.rmid === RM_XLOG_ID && (xlogInfo === XLOG_CHECKPOINT_ONLINE || (xlogInfo === XLOG_CHECKPOINT_REDO && layout.major >= 17))) {
      attribution.checkpointRecords += 1
    }
    if (!ourXids.has(record.xid) && !(record.topLevelXid !== null && ourXids.has(record.topLevelXid))) return
    attribution.oursAlignedBytes += record.footprint
    const own = entry(String(record.blocks[0]?.relNumber ?? ''), type)
    own.records += 1
    own.bytes += record.totalLength - record.imageBytes
    for (const block of record.blocks) {
      if (!block.hasImage) continue
      const image = entry(String(block.relNumber), type)
      image.bytes += block.imageBytes
      image.fpiBytes += block.imageBytes
      image.fpiCount += 1
    }
  }
  const reader = new WalReader({ ...layout, verifyCrc }, start.bytes, end.bytes, onRecord)
  for await (const chunk of walBytes(session, reader.readFrom, end.bytes, layout.segmentSize)) {
    reader.push(chunk)
    if (reader.done) break
  }
  reader.finish()
  for (const [relation, types] of ours) attribution.ours.set(relation, [...types.values()])
  return attribution
}
