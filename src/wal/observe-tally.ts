// biome-ignore-all lint/style/noNonNullAssertion: blocks[i] exists for every i below blockCount (the reader fills them); checks in the per-record loop would cost time for nothing.

import { maxAlign, type WalLayout, type WalRecord } from '../decode/reader.js'
import { type FileLocator, fileKey, RM_XACT_ID, transactionEnd } from '../decode/xact-record.js'
import { mergeTotals, type RecordTypeTotals, type RecordTypeWal, typeName } from './attribution.js'

/** What one relation file took in a window: records to the file of their first block, images to each block's. */
export interface FileWal extends FileLocator {
  /** Records whose first block reference is this file's. */
  records: number
  /** Those records' bytes without images, plus the images of this file's blocks. */
  bytes: number
  fpiCount: number
  fpiBytes: number
  /** The same by record type, most bytes first. */
  recordTypes: RecordTypeWal[]
  /** A Storage/CREATE record made the file inside the window (a new table, a rewrite's new file). */
  created: boolean
  /** A commit deleted the file inside the window (DROP, a rewrite's old file), or an abort its new one. */
  dropped: boolean
}

/** Where WAL of no relation comes from. */
export type UnattributedKind =
  | 'transactions'
  | 'checkpoints'
  | 'standby'
  | 'storage'
  | 'messages'
  | 'xlog'
  | 'other'
  | 'alignment'
  | 'switch padding'
  | 'page headers'

export interface UnattributedWal {
  kind: UnattributedKind
  /** Records of this kind: 0 for alignment, switch padding and page headers, which are not records. */
  records: number
  bytes: number
  recordTypes: RecordTypeWal[]
}

export interface ImageCount {
  count: number
  bytes: number
}

/** Full-page images by why they were logged. */
export interface FpiReasons {
  /** In an ordinary record, to be applied at replay: the block's first change since the checkpoint's redo. */
  afterCheckpoint: ImageCount
  /** XLOG/FPI_FOR_HINT: a hint bit set on a page not yet changed since the checkpoint (checksums or wal_log_hints). */
  hintBits: ImageCount
  /** Pages logged whole (XLOG/FPI: index builds, bulk operations) and images kept only for wal_consistency_checking. */
  other: ImageCount
}

export interface TransactionCounts {
  /** Commit records (COMMIT and COMMIT PREPARED) in the window. */
  committed: number
  /** Abort records: rolled-back transactions and subtransactions that had an xid, and ROLLBACK PREPARED. */
  aborted: number
  /** The WAL of the transactions and subtransactions that aborted, their abort records included, as far as it lies in the window. */
  abortedBytes: number
}

/** A window's WAL split by relation file and by what belongs to none; the parts add up to the window's bytes. */
export interface WindowWal {
  records: number
  fpiCount: number
  files: FileWal[]
  /** Most bytes first; only kinds that have any. */
  unattributed: UnattributedWal[]
  fpiReasons: FpiReasons
  transactions: TransactionCounts
  /** Checkpoints that began (CHECKPOINT_REDO, 17+) or ended (CHECKPOINT_ONLINE) in the window. */
  checkpointRecords: number
  /** Every record by type, as pg_get_wal_stats counts them. */
  byType: Map<string, RecordTypeTotals>
}

/**
 * A tally of part of a window, to be absorbed by the tally of the whole (see `absorb`): what
 * parallel readers of consecutive stretches of WAL send back. Plain data: it crosses threads.
 */
export interface TallyState {
  counters: {
    records: number
    fpiCount: number
    footprints: number
    alignment: number
    switchPadding: number
    crossedHeaders: number
    checkpointRecords: number
  }
  typeRecords: Float64Array
  typeRecordBytes: Float64Array
  typeImageBytes: Float64Array
  files: Array<FileLocator & { types: Array<[number, TypeTally]> }>
  unattributed: Array<[UnattributedKind, Array<[number, TypeTally]>]>
  reasons: FpiReasons
  transactions: TransactionCounts
  /** Transactions still open at the stretch's end, and their WAL in it. */
  open: Array<[number, number]>
  /** The transactions (and subtransactions) that ended in the stretch, in order, and whether they aborted. */
  endedXids: number[]
  endedAborted: boolean[]
  created: string[]
  dropped: string[]
}

interface TypeTally {
  records: number
  bytes: number
  fpiCount: number
  fpiBytes: number
}

interface FileTally extends FileLocator {
  types: Map<number, TypeTally>
  lastTypeKey: number
  lastType: TypeTally | null
}

const RM_XLOG_ID = 0
const RM_STORAGE_ID = 2
const RM_STANDBY_ID = 8
const RM_LOGICALMSG_ID = 21
const XLOG_CHECKPOINT_SHUTDOWN = 0x00
const XLOG_CHECKPOINT_ONLINE = 0x10
const XLOG_SWITCH = 0x40
const XLOG_FPI_FOR_HINT = 0xa0
const XLOG_CHECKPOINT_REDO = 0xe0
const XLOG_SMGR_CREATE = 0x10
const MAIN_FORK = 0
const RECENT_FILES = 8
/** A file no block reference names (relfilenodes are unsigned): what `recent` holds before it has files. */
const NO_FILE: FileTally = {
  tablespace: -1,
  database: -1,
  relNumber: -1,
  types: new Map(),
  lastTypeKey: -1,
  lastType: null,
}
/** Slots for the WAL of open transactions, by the low bits of their xids. */
const OPEN_SLOTS = 16_384
/** Type keys are `rmid << 8 | info`, both a byte. */
const TYPE_KEYS = 65_536

/**
 * Tallies every record of a window by relation file, as it is read: from a live server, a
 * measurement's window or WAL files on disk alike. Nothing here knows where the bytes came from.
 */
export class ObserveTally {
  private records = 0
  private fpiCount = 0
  private footprints = 0
  private alignment = 0
  private switchPadding = 0
  private crossedHeaders = 0
  private checkpointRecords = 0
  /** Records, bytes without images and image bytes of every type, indexed by type key: no Map lookup per record. */
  private readonly typeRecords = new Float64Array(TYPE_KEYS)
  private readonly typeRecordBytes = new Float64Array(TYPE_KEYS)
  private readonly typeImageBytes = new Float64Array(TYPE_KEYS)
  private readonly files = new Map<string, FileTally>()
  /**
   * Files of the last records: a run of records hits a few, and comparing three numbers beats a Map
   * lookup by string. Made full, of a file no block names: an empty array changes its kind at the
   * first file stored, and V8 would throw away the code it optimised for the previous tally's.
   */
  private readonly recent: FileTally[] = Array.from({ length: RECENT_FILES }, () => NO_FILE)
  private nextRecent = 0
  private readonly unattributed = new Map<UnattributedKind, Map<number, TypeTally>>()
  private readonly reasons: FpiReasons = {
    afterCheckpoint: { count: 0, bytes: 0 },
    hintBits: { count: 0, bytes: 0 },
    other: { count: 0, bytes: 0 },
  }
  private readonly transactions: TransactionCounts = { committed: 0, aborted: 0, abortedBytes: 0 }
  /**
   * WAL of each transaction not yet ended in the window, forgotten at its end so that memory
   * follows the open ones: in a slot by its low bits (xids of open transactions are mostly recent
   * and distinct there), in the Map when another open one holds the slot. No allocation a record.
   */
  private readonly slotXids = new Uint32Array(OPEN_SLOTS)
  private readonly slotBytes = new Float64Array(OPEN_SLOTS)
  private readonly openBytes = new Map<number, number>()
  /** Records come in runs of one transaction: the run's bytes are added up here before they reach openBytes. */
  private runXid = 0
  private runBytes = 0
  private readonly created = new Set<string>()
  private readonly dropped = new Set<string>()

  /** With `forMerge`, the ends of transactions are kept for `state()`: a stretch's, not a whole archive's. */
  private readonly endedXids: number[] = []
  private readonly endedAborted: boolean[] = []

  constructor(
    private readonly layout: WalLayout,
    private readonly forMerge = false,
  ) {}

  readonly onRecord = (record: WalRecord): void => {
    const typeKey = (record.rmid << 8) | record.info
    const { typeRecords, typeRecordBytes, typeImageBytes } = this
    typeRecords[typeKey] = typeRecords[typeKey]! + 1
    typeRecordBytes[typeKey] = typeRecordBytes[typeKey]! + record.totalLength - record.imageBytes
    typeImageBytes[typeKey] = typeImageBytes[typeKey]! + record.imageBytes
    this.records += 1
    this.footprints += record.footprint
    const aligned = maxAlign(record.totalLength)
    this.alignment += aligned - record.totalLength
    // Past its aligned length, a record's footprint is the headers of the pages it crosses, or
    // after an XLOG_SWITCH the rest of the segment.
    if (record.rmid === RM_XLOG_ID && (record.info & 0xf0) === XLOG_SWITCH)
      this.switchPadding += record.footprint - aligned
    else this.crossedHeaders += record.footprint - aligned
    if (record.xid !== this.runXid) this.endRun(record.xid)
    this.runBytes += record.footprint
    if (record.blockCount === 0) {
      this.noRelation(record, typeKey)
      return
    }
    const own = this.typeOf(this.fileOf(record.blocks[0]!), typeKey)
    own.records += 1
    own.bytes += record.totalLength - record.imageBytes
    if (record.imageBytes === 0) return
    const reason =
      record.rmid === RM_XLOG_ID && (record.info & 0xf0) === XLOG_FPI_FOR_HINT
        ? this.reasons.hintBits
        : record.rmid === RM_XLOG_ID
          ? this.reasons.other
          : null
    for (let i = 0; i < record.blockCount; i++) {
      const block = record.blocks[i]!
      if (!block.hasImage) continue
      const image = this.typeOf(this.fileOf(block), typeKey)
      image.bytes += block.imageBytes
      image.fpiBytes += block.imageBytes
      image.fpiCount += 1
      this.fpiCount += 1
      const counted = reason ?? (block.imageApply ? this.reasons.afterCheckpoint : this.reasons.other)
      counted.count += 1
      counted.bytes += block.imageBytes
    }
  }

  private noRelation(record: WalRecord, typeKey: number): void {
    const xlogInfo = record.info & 0xf0
    let kind: UnattributedKind = 'other'
    if (record.rmid === RM_XLOG_ID) {
      // CHECKPOINT_REDO (17+) marks where a checkpoint starts, CHECKPOINT_ONLINE where one ends.
      const checkpoint = xlogInfo === XLOG_CHECKPOINT_ONLINE || xlogInfo === XLOG_CHECKPOINT_REDO
      if (checkpoint) this.checkpointRecords += 1
      kind = checkpoint || xlogInfo === XLOG_CHECKPOINT_SHUTDOWN ? 'checkpoints' : 'xlog'
    } else if (record.rmid === RM_XACT_ID) {
      kind = 'transactions'
      this.endTransaction(record)
    } else if (record.rmid === RM_STORAGE_ID) {
      kind = 'storage'
      if (xlogInfo === XLOG_SMGR_CREATE && record.mainDataLength >= 16) {
        const at = record.mainDataOffset
        const { view } = record
        if (view.getInt32(at + 12, true) === MAIN_FORK) {
          this.created.add(
            fileKey({
              tablespace: view.getUint32(at, true),
              database: view.getUint32(at + 4, true),
              relNumber: view.getUint32(at + 8, true),
            }),
          )
        }
      }
    } else if (record.rmid === RM_STANDBY_ID) kind = 'standby'
    else if (record.rmid === RM_LOGICALMSG_ID) kind = 'messages'
    let types = this.unattributed.get(kind)
    if (!types) {
      types = new Map()
      this.unattributed.set(kind, types)
    }
    let type = types.get(typeKey)
    if (!type) {
      type = { records: 0, bytes: 0, fpiCount: 0, fpiBytes: 0 }
      types.set(typeKey, type)
    }
    type.records += 1
    type.bytes += record.totalLength
  }

  /** The run of records of one transaction ends; the next one's, of `xid`, begins. */
  private endRun(xid: number): void {
    if (this.runXid !== 0) this.addOpen(this.runXid, this.runBytes)
    this.runXid = xid
    this.runBytes = 0
  }

  private addOpen(xid: number, bytes: number): void {
    const slot = xid & (OPEN_SLOTS - 1)
    const holder = this.slotXids[slot]!
    if (holder === xid) this.slotBytes[slot] = this.slotBytes[slot]! + bytes
    else if (holder === 0) {
      this.slotXids[slot] = xid
      this.slotBytes[slot] = bytes
    } else this.openBytes.set(xid, (this.openBytes.get(xid) ?? 0) + bytes)
  }

  /** This tally as plain data, for the tally of the whole window (`absorb`). */
  state(): TallyState {
    this.endRun(0)
    const open: Array<[number, number]> = [...this.openBytes]
    for (let slot = 0; slot < OPEN_SLOTS; slot++) {
      const xid = this.slotXids[slot]!
      if (xid !== 0) open.push([xid, this.slotBytes[slot]!])
    }
    const types = (tallies: Map<number, TypeTally>): Array<[number, TypeTally]> => [...tallies]
    return {
      counters: {
        records: this.records,
        fpiCount: this.fpiCount,
        footprints: this.footprints,
        alignment: this.alignment,
        switchPadding: this.switchPadding,
        crossedHeaders: this.crossedHeaders,
        checkpointRecords: this.checkpointRecords,
      },
      typeRecords: this.typeRecords,
      typeRecordBytes: this.typeRecordBytes,
      typeImageBytes: this.typeImageBytes,
      files: [...this.files.values()].map((file) => ({
        tablespace: file.tablespace,
        database: file.database,
        relNumber: file.relNumber,
        types: types(file.types),
      })),
      unattributed: [...this.unattributed].map(([kind, tallies]) => [kind, types(tallies)]),
      reasons: this.reasons,
      transactions: this.transactions,
      open,
      endedXids: this.endedXids,
      endedAborted: this.endedAborted,
      created: [...this.created],
      dropped: [...this.dropped],
    }
  }

  /**
   * Adds the tally of the stretch of WAL that follows what this one has read: a transaction open
   * here that ended there is settled (its WAL here counts as rolled back if it aborted), and one
   * still open there stays open here.
   */
  absorb(state: TallyState): void {
    this.endRun(0)
    this.records += state.counters.records
    this.fpiCount += state.counters.fpiCount
    this.footprints += state.counters.footprints
    this.alignment += state.counters.alignment
    this.switchPadding += state.counters.switchPadding
    this.crossedHeaders += state.counters.crossedHeaders
    this.checkpointRecords += state.counters.checkpointRecords
    for (let typeKey = 0; typeKey < TYPE_KEYS; typeKey++) {
      if (state.typeRecords[typeKey] === 0) continue
      this.typeRecords[typeKey] = this.typeRecords[typeKey]! + state.typeRecords[typeKey]!
      this.typeRecordBytes[typeKey] = this.typeRecordBytes[typeKey]! + state.typeRecordBytes[typeKey]!
      this.typeImageBytes[typeKey] = this.typeImageBytes[typeKey]! + state.typeImageBytes[typeKey]!
    }
    for (const file of state.files) {
      const own = this.fileOf(file)
      for (const [typeKey, tally] of file.types) addTally(this.typeOf(own, typeKey), tally)
    }
    for (const [kind, tallies] of state.unattributed) {
      let own = this.unattributed.get(kind)
      if (!own) {
        own = new Map()
        this.unattributed.set(kind, own)
      }
      for (const [typeKey, tally] of tallies) {
        const into = own.get(typeKey) ?? { records: 0, bytes: 0, fpiCount: 0, fpiBytes: 0 }
        addTally(into, tally)
        own.set(typeKey, into)
      }
    }
    for (const reason of ['afterCheckpoint', 'hintBits', 'other'] as const) {
      this.reasons[reason].count += state.reasons[reason].count
      this.reasons[reason].bytes += state.reasons[reason].bytes
    }
    this.transactions.committed += state.transactions.committed
    this.transactions.aborted += state.transactions.aborted
    this.transactions.abortedBytes += state.transactions.abortedBytes
    for (const [i, xid] of state.endedXids.entries()) {
      const before = this.forget(xid)
      if (state.endedAborted[i]) this.transactions.abortedBytes += before
    }
    for (const [xid, bytes] of state.open) this.addOpen(xid, bytes)
    for (const key of state.created) this.created.add(key)
    for (const key of state.dropped) this.dropped.add(key)
  }

  private endTransaction(record: WalRecord): void {
    const end = transactionEnd(record, this.layout.major)
    if (!end) return
    this.endRun(0)
    if (end.committed) this.transactions.committed += 1
    else this.transactions.aborted += 1
    let bytes = (end.xid === record.xid ? 0 : record.footprint) + this.forget(end.xid)
    for (const xid of end.subxacts) bytes += this.forget(xid)
    if (!end.committed) this.transactions.abortedBytes += bytes
    for (const file of end.dropped) this.dropped.add(fileKey(file))
    if (this.forMerge) {
      for (const xid of [end.xid, ...end.subxacts]) {
        this.endedXids.push(xid)
        this.endedAborted.push(!end.committed)
      }
    }
  }

  /** The WAL of a transaction that ended, no longer kept. */
  private forget(xid: number): number {
    const slot = xid & (OPEN_SLOTS - 1)
    let bytes = 0
    if (this.slotXids[slot] === xid) {
      bytes = this.slotBytes[slot]!
      this.slotXids[slot] = 0
    }
    const spilled = this.openBytes.get(xid)
    if (spilled === undefined) return bytes
    this.openBytes.delete(xid)
    return bytes + spilled
  }

  private fileOf(block: FileLocator): FileTally {
    const recent = this.recent
    for (let i = 0; i < recent.length; i++) {
      const file = recent[i]!
      if (
        file.relNumber === block.relNumber &&
        file.database === block.database &&
        file.tablespace === block.tablespace
      )
        return file
    }
    const key = fileKey(block)
    let file = this.files.get(key)
    if (!file) {
      file = {
        tablespace: block.tablespace,
        database: block.database,
        relNumber: block.relNumber,
        types: new Map(),
        lastTypeKey: -1,
        lastType: null,
      }
      this.files.set(key, file)
    }
    recent[this.nextRecent] = file
    this.nextRecent = (this.nextRecent + 1) % RECENT_FILES
    return file
  }

  private typeOf(file: FileTally, typeKey: number): TypeTally {
    if (file.lastTypeKey === typeKey && file.lastType) return file.lastType
    let type = file.types.get(typeKey)
    if (!type) {
      type = { records: 0, bytes: 0, fpiCount: 0, fpiBytes: 0 }
      file.types.set(typeKey, type)
    }
    file.lastTypeKey = typeKey
    file.lastType = type
    return type
  }

  /**
   * The window so far, `windowBytes` being its LSN distance: what no record occupies there is the
   * pages' headers.
   */
  summary(windowBytes: number): WindowWal {
    const named = (types: Map<number, TypeTally>) => this.named(types)
    const files = [...this.files.values()].map((file): FileWal => {
      const recordTypes = named(file.types)
      const key = fileKey(file)
      return {
        tablespace: file.tablespace,
        database: file.database,
        relNumber: file.relNumber,
        ...sumOf(recordTypes),
        recordTypes,
        created: this.created.has(key),
        dropped: this.dropped.has(key),
      }
    })
    const unattributed: UnattributedWal[] = [...this.unattributed].map(([kind, types]) => {
      const recordTypes = named(types)
      const { records, bytes } = sumOf(recordTypes)
      return { kind, records, bytes, recordTypes }
    })
    const padding = (kind: UnattributedKind, bytes: number): UnattributedWal[] =>
      bytes > 0 ? [{ kind, records: 0, bytes, recordTypes: [] }] : []
    unattributed.push(
      ...padding('alignment', this.alignment),
      ...padding('switch padding', this.switchPadding),
      ...padding('page headers', windowBytes - this.footprints + this.crossedHeaders),
    )
    return {
      records: this.records,
      fpiCount: this.fpiCount,
      files: files.sort((a, b) => b.bytes - a.bytes),
      unattributed: unattributed.sort((a, b) => b.bytes - a.bytes),
      fpiReasons: structuredClone(this.reasons),
      transactions: { ...this.transactions },
      checkpointRecords: this.checkpointRecords,
      byType: mergeTotals(this.typeTotals(), (typeKey) => typeName(typeKey, this.layout.major)),
    }
  }

  private typeTotals(): Map<number, RecordTypeTotals> {
    const totals = new Map<number, RecordTypeTotals>()
    for (let typeKey = 0; typeKey < TYPE_KEYS; typeKey++) {
      const records = this.typeRecords[typeKey]!
      if (records === 0) continue
      totals.set(typeKey, {
        records,
        recordBytes: this.typeRecordBytes[typeKey]!,
        fpiBytes: this.typeImageBytes[typeKey]!,
      })
    }
    return totals
  }

  /** Types that share a name (info bits the stats ignore) merged, most bytes first. */
  private named(types: Map<number, TypeTally>): RecordTypeWal[] {
    const byName = new Map<string, RecordTypeWal>()
    for (const [typeKey, tally] of types) {
      const type = typeName(typeKey, this.layout.major)
      const merged = byName.get(type)
      if (!merged) byName.set(type, { type, ...tally })
      else {
        merged.records += tally.records
        merged.bytes += tally.bytes
        merged.fpiCount += tally.fpiCount
        merged.fpiBytes += tally.fpiBytes
      }
    }
    return [...byName.values()].sort((a, b) => b.bytes - a.bytes)
  }
}

function addTally(into: TypeTally, tally: TypeTally): void {
  into.records += tally.records
  into.bytes += tally.bytes
  into.fpiCount += tally.fpiCount
  into.fpiBytes += tally.fpiBytes
}

function sumOf(types: readonly RecordTypeWal[]): Omit<RecordTypeWal, 'type'> {
  const sum = { records: 0, bytes: 0, fpiCount: 0, fpiBytes: 0 }
  for (const type of types) {
    sum.records += type.records
    sum.bytes += type.bytes
    sum.fpiCount += type.fpiCount
    sum.fpiBytes += type.fpiBytes
  }
  return sum
}
