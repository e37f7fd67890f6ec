// biome-ignore-all lint/style/noNonNullAssertion: blocks[i] exists for every i below blockCount (the reader fills them); checks in the per-record loop would cost time for nothing.

import { WalcostError } from '../core/errors.js'
import {
  addInsertedRows,
  type InsertedRows,
  isHeapInsert,
  type StoredAttribute,
  type TupleShape,
  tupleShape,
} from '../decode/heap-inserts.js'
import { type WalLayout, WalReader, type WalRecord } from '../decode/reader.js'
import { recordTypeName } from '../decode/record-types.js'
import { RM_XACT_ID, transactionEnd } from '../decode/xact-record.js'
import type { Session } from '../driver/types.js'
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
   * What other transactions that committed inside the window wrote, by relfilenode of each
   * record's first block: on the table, writes the batch's code made through a connection of its
   * own, which walcost's rollback did not undo. Their blocks are in othersByRelation too. The
   * reader only.
   */
  committedOthers: Map<string, CommittedWal> | null
  /**
   * Our non-HOT updates (Heap/UPDATE) whose new tuple went to another page than the old one (the
   * record names two blocks), by relfilenode: those found no room. The reader only.
   */
  updatesToNewPage: Map<string, number> | null
  /** The rows our insert records put into the heap the tally was given (WindowTally's `heap`); null without one. */
  insertedRows: InsertedRows | null
}

/** What other committed transactions wrote to one relation in the window. */
export interface CommittedWal {
  /** Records whose first block is the relation. */
  records: number
  /** Their bytes without images, plus the images of the relation's blocks. */
  bytes: number
}

/** The table whose new rows the tally decodes from its insert records, to count their bytes. */
export interface TalliedHeap {
  relNumber: number
  attributes: readonly StoredAttribute[]
}

const RM_XLOG_ID = 0
const RM_HEAP_ID = 10
/** XLOG_HEAP_UPDATE within XLOG_HEAP_OPMASK (heapam_xlog.h). */
const XLOG_HEAP_UPDATE = 0x20
const XLOG_HEAP_OPMASK = 0x70
const XLOG_CHECKPOINT_ONLINE = 0x10
const XLOG_CHECKPOINT_REDO = 0xe0

/** What one transaction (or subtransaction) wrote in the window, keyed by numbers while reading. */
interface XidWal {
  /** The top-level xid the records name, for a subtransaction's (wal_level logical). */
  topLevelXid: number | null
  alignedBytes: number
  /** By relation * 65,536 + record type key: the record's own bytes under its first block's relation, images under their own. */
  entries: Map<number, TalliedWal>
  /** Block references to another relation than their record's first block's, by relation. */
  otherBlocks: Map<number, number>
  /** Heap/UPDATE records whose new tuple went to another page, by relation. */
  toNewPage: Map<number, number>
  inserted: InsertedRows
  /**
   * The entries last used, by a hash of relation and type: a batch repeats a few of them (the heap
   * insert, then each index's), and two integer comparisons cost less than a Map lookup by a key
   * past 2^31, which V8 boxes.
   */
  recent: (RecentEntry | undefined)[]
}

/** An entry while reading: counting a record's blocks on it spares a Map update per block. */
interface TalliedWal extends RecordTypeWal {
  /** Block references to this entry's relation in the records counted here. */
  blocks: number
}

interface RecentEntry {
  relation: number
  typeKey: number
  wal: TalliedWal
}

const RECENT_SLOTS = 64

/**
 * Tallies a window's records as they are read, by transaction: which of them are ours is decided
 * at the end, so that reading can start before the batch has its transaction ids.
 */
export class WindowTally {
  private readonly totals = new Map<number, RecordTypeTotals>()
  private readonly byXid = new Map<number, XidWal>()
  private alignedBytes = 0
  private checkpointRecords = 0
  /** Transactions (and their subtransactions) whose commit record is in the window. */
  private readonly committed = new Set<number>()
  // Records come in runs of one transaction: the last one's tally is kept at hand.
  private lastXid = -1
  private last: XidWal | null = null

  /** The table whose rows are decoded, and how its tuples are laid out. */
  private readonly heap: { relNumber: number; shape: TupleShape } | null

  constructor(
    private readonly layout: WalLayout,
    heap: TalliedHeap | null = null,
  ) {
    this.heap = heap ? { relNumber: heap.relNumber, shape: tupleShape(heap.attributes) } : null
  }

  readonly onRecord = (record: WalRecord): void => {
    const typeKey = (record.rmid << 8) | record.info
    let total = this.totals.get(typeKey)
    if (!total) {
      total = { records: 0, recordBytes: 0, fpiBytes: 0 }
      this.totals.set(typeKey, total)
    }
    total.records += 1
    total.recordBytes += record.totalLength - record.imageBytes
    total.fpiBytes += record.imageBytes
    this.alignedBytes += record.footprint
    const xlogInfo = record.info & 0xf0
    if (
      record.rmid === RM_XLOG_ID &&
      (xlogInfo === XLOG_CHECKPOINT_ONLINE || (xlogInfo === XLOG_CHECKPOINT_REDO && this.layout.major >= 17))
    ) {
      this.checkpointRecords += 1
    }
    if (record.rmid === RM_XACT_ID) {
      const end = transactionEnd(record, this.layout.major)
      if (end?.committed) {
        this.committed.add(end.xid)
        for (const subxact of end.subxacts) this.committed.add(subxact)
      }
    }
    const wal = this.xidWal(record.xid)
    if (record.topLevelXid !== null) wal.topLevelXid = record.topLevelXid
    wal.alignedBytes += record.footprint
    // heap_xlog_update: block 0 is the new tuple's page, block 1 the old one's when they differ.
    if (record.rmid === RM_HEAP_ID && (record.info & XLOG_HEAP_OPMASK) === XLOG_HEAP_UPDATE && record.blockCount > 1) {
      const relation = record.blocks[0]!.relNumber
      wal.toNewPage.set(relation, (wal.toNewPage.get(relation) ?? 0) + 1)
    }
    if (
      this.heap &&
      record.blockCount > 0 &&
      record.blocks[0]!.relNumber === this.heap.relNumber &&
      record.blocks[0]!.fork === 0 &&
      isHeapInsert(record)
    ) {
      addInsertedRows(record, this.heap.shape, this.layout.blockSize, wal.inserted)
    }
    // -1: a record with no block reference.
    const relation = record.blockCount > 0 ? record.blocks[0]!.relNumber : -1
    const own = entry(wal, relation, typeKey)
    own.records += 1
    own.bytes += record.totalLength - record.imageBytes
    for (let i = 0; i < record.blockCount; i++) {
      const block = record.blocks[i]!
      if (block.relNumber === relation) own.blocks += 1
      else wal.otherBlocks.set(block.relNumber, (wal.otherBlocks.get(block.relNumber) ?? 0) + 1)
      if (!block.hasImage) continue
      const image = entry(wal, block.relNumber, typeKey)
      image.bytes += block.imageBytes
      image.fpiBytes += block.imageBytes
      image.fpiCount += 1
    }
  }

  private xidWal(xid: number): XidWal {
    if (xid === this.lastXid && this.last) return this.last
    let wal = this.byXid.get(xid)
    if (!wal) {
      wal = {
        topLevelXid: null,
        alignedBytes: 0,
        entries: new Map(),
        otherBlocks: new Map(),
        toNewPage: new Map(),
        inserted: { rows: 0, bytes: 0, unread: 0 },
        recent: new Array(RECENT_SLOTS),
      }
      this.byXid.set(xid, wal)
    }
    this.lastXid = xid
    this.last = wal
    return wal
  }

  /**
   * The window split between our transaction and the rest. `xids` are ours: the top-level xid and
   * those of its subtransactions.
   */
  attribute(xids: readonly string[]): WindowAttribution {
    const ourXids = new Set(xids.map(Number))
    const ours = new Map<number, RecordTypeWal>()
    const others = new Map<number, number>()
    const committedOthers = new Map<string, CommittedWal>()
    const toNewPage = new Map<number, number>()
    let oursAlignedBytes = 0
    const inserted = { rows: 0, bytes: 0, unread: 0 }
    const add = (into: Map<number, number>, from: Map<number, number>) => {
      for (const [relation, count] of from) into.set(relation, (into.get(relation) ?? 0) + count)
    }
    for (const [xid, wal] of this.byXid) {
      if (!ourXids.has(xid) && !(wal.topLevelXid !== null && ourXids.has(wal.topLevelXid))) {
        if (this.committed.has(xid) || (wal.topLevelXid !== null && this.committed.has(wal.topLevelXid)))
          addCommitted(committedOthers, wal)
        add(others, wal.otherBlocks)
        for (const [key, { blocks }] of wal.entries) {
          const { relation } = splitEntryKey(key)
          if (blocks > 0) others.set(relation, (others.get(relation) ?? 0) + blocks)
        }
        continue
      }
      oursAlignedBytes += wal.alignedBytes
      add(toNewPage, wal.toNewPage)
      inserted.rows += wal.inserted.rows
      inserted.bytes += wal.inserted.bytes
      inserted.unread += wal.inserted.unread
      for (const [key, { blocks: _, ...entryWal }] of wal.entries) {
        const merged = ours.get(key)
        if (!merged) ours.set(key, entryWal)
        else addWal(merged, entryWal)
      }
    }
    const nameOf = (typeKey: number) => typeName(typeKey, this.layout.major)
    const byRelation = (counts: Map<number, number>) =>
      new Map([...counts].map(([relation, records]) => [String(relation), records]))
    return {
      ours: mergeByName(ours, nameOf),
      alignedBytes: this.alignedBytes,
      oursAlignedBytes,
      checkpointRecords: this.checkpointRecords,
      byType: mergeTotals(this.totals, nameOf),
      othersByRelation: byRelation(others),
      committedOthers,
      updatesToNewPage: byRelation(toNewPage),
      insertedRows: this.heap ? inserted : null,
    }
  }
}

/** Adds one committed transaction's records (and images) to the relations they name. */
function addCommitted(into: Map<string, CommittedWal>, wal: XidWal): void {
  for (const [key, entryWal] of wal.entries) {
    const { relation } = splitEntryKey(key)
    if (relation === -1) continue
    const committed = into.get(String(relation)) ?? { records: 0, bytes: 0 }
    into.set(String(relation), committed)
    committed.records += entryWal.records
    committed.bytes += entryWal.bytes
  }
}

/**
 * The name of a record type keyed as `rmid << 8 | info`, as pg_get_wal_stats prints it; a resource
 * manager the major does not have is WAL this reader cannot vouch for.
 */
export function typeName(typeKey: number, major: number): string {
  try {
    return recordTypeName(typeKey >> 8, typeKey & 0xff, major)
  } catch (error) {
    throw new WalcostError(
      'WAL_UNREADABLE',
      `the WAL holds a record of resource manager ${typeKey >> 8}, which PostgreSQL ${major} does not have.`,
      { cause: error },
    )
  }
}

/** An entry's key: its relation (-1 for none) and its record type in one number. */
const entryKey = (relation: number, typeKey: number) => relation * 65_536 + typeKey

function splitEntryKey(key: number): { relation: number; typeKey: number } {
  const relation = Math.floor(key / 65_536)
  return { relation, typeKey: key - relation * 65_536 }
}

function entry(wal: XidWal, relation: number, typeKey: number): TalliedWal {
  const slot = (relation * 31 + typeKey) & (RECENT_SLOTS - 1)
  const recent = wal.recent[slot]
  if (recent !== undefined && recent.relation === relation && recent.typeKey === typeKey) return recent.wal
  const key = entryKey(relation, typeKey)
  let found = wal.entries.get(key)
  if (!found) {
    found = { type: '', records: 0, bytes: 0, fpiBytes: 0, fpiCount: 0, blocks: 0 }
    wal.entries.set(key, found)
  }
  wal.recent[slot] = { relation, typeKey, wal: found }
  return found
}

/**
 * Reads the window's records from the WAL itself, after it was written, and splits them by
 * transaction and relation: a record's own bytes go to the relation of its first block reference,
 * whatever that block's id, and each image to the relation of its own block. `xids` are our
 * transaction's ids: the top-level one and those of its subtransactions.
 */
export async function readWindow(
  session: Session,
  layout: WalLayout,
  start: WalPosition,
  end: WalPosition,
  xids: readonly string[],
  verifyCrc = false,
): Promise<WindowAttribution> {
  return (await readTally(session, layout, start, end, null, verifyCrc)).attribute(xids)
}

/** The window's records read into a tally, once written; `heap` as for WindowTally. */
export async function readTally(
  session: Session,
  layout: WalLayout,
  start: WalPosition,
  end: WalPosition,
  heap: TalliedHeap | null,
  verifyCrc = false,
): Promise<WindowTally> {
  const tally = new WindowTally(layout, heap)
  await readRecords(session, layout, start, end, tally.onRecord, verifyCrc)
  return tally
}

/** Every record of the window, once written, to `onRecord`: the one reading of a window after the fact. */
export async function readRecords(
  session: Session,
  layout: WalLayout,
  start: WalPosition,
  end: WalPosition,
  onRecord: (record: WalRecord) => void,
  verifyCrc = false,
): Promise<void> {
  const reader = new WalReader({ ...layout, verifyCrc }, start.bytes, end.bytes, onRecord)
  // Read to the stream's end, not only to the reader's: leaving a COPY before its trailer would
  // leave the connection in the middle of it. What comes after the window is a few bytes at most.
  for await (const chunk of walBytes(session, reader.readFrom, end.bytes, layout.segmentSize)) reader.push(chunk)
  reader.finish()
}

/** Types that differ only in info bits the stats ignore share a name: their counts add up. */
export function mergeTotals(
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
    const { relation: relationNumber, typeKey } = splitEntryKey(key)
    const relation = relationNumber === -1 ? '' : String(relationNumber)
    const type = nameOf(typeKey)
    const types = byRelation.get(relation) ?? new Map()
    byRelation.set(relation, types)
    const merged = types.get(type)
    if (!merged) types.set(type, { ...wal, type })
    else addWal(merged, wal)
  }
  return new Map([...byRelation].map(([relation, types]) => [relation, [...types.values()]]))
}

function addWal(into: RecordTypeWal, wal: RecordTypeWal): void {
  into.records += wal.records
  into.bytes += wal.bytes
  into.fpiBytes += wal.fpiBytes
  into.fpiCount += wal.fpiCount
}
