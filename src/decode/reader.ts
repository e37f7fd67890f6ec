// A reader of PostgreSQL's WAL (14-18) from the segment bytes, as DecodeXLogRecord reads it
// (src/backend/access/transam/xlogreader.c; layouts in src/include/access/xlog_internal.h and
// xlogrecord.h). It decodes headers only: record sizes, block references, images, and the
// transaction id, which is all attribution needs.
import { WalcostError } from '../core/errors.js'
import { XLOG_LONG_PAGE_HEADER, XLOG_SHORT_PAGE_HEADER } from '../core/units.js'
import { recordCrc32c } from './crc32c.js'

/** XLOG_PAGE_MAGIC of each major: a page of another major is refused, not misread. */
export const PAGE_MAGIC: Readonly<Record<number, number>> = {
  14: 0xd10d,
  15: 0xd110,
  16: 0xd113,
  17: 0xd116,
  18: 0xd118,
}

const XLP_FIRST_IS_CONTRECORD = 0x0001
const XLP_LONG_HEADER = 0x0002
const RECORD_HEADER = 24
const XLR_MAX_BLOCK_ID = 32
const BLOCK_ID_DATA_SHORT = 255
const BLOCK_ID_DATA_LONG = 254
const BLOCK_ID_ORIGIN = 253
const BLOCK_ID_TOPLEVEL_XID = 252
const BKPBLOCK_HAS_IMAGE = 0x10
const BKPBLOCK_HAS_DATA = 0x20
const BKPBLOCK_SAME_REL = 0x80
const BKPIMAGE_HAS_HOLE = 0x01
const RM_XLOG_ID = 0
const XLOG_SWITCH = 0x40

/** No record is longer (XLogRecordMaxSize is 1020 MB; older majors stop at MaxAllocSize, 1 GB). */
const RECORD_MAX_LENGTH = 1024 * 1024 * 1024 - 1

/** `n` rounded up to a multiple of 8 (MAXALIGN): for lengths and offsets within a page or a record, below 2^31. */
export const maxAlign = (n: number): number => (n + 7) & ~7
/** A little-endian uint64 that fits a JavaScript number (any LSN below 8 PB). */
const getUint64 = (view: DataView, at: number) => view.getUint32(at, true) + view.getUint32(at + 4, true) * 2 ** 32

/** One block reference of a record: its relation and, when it carries one, the image's stored size. */
export interface BlockRef {
  tablespace: number
  database: number
  relNumber: number
  fork: number
  block: number
  /** Bytes of its full-page image as stored (compressed, without the hole); 0 without an image. */
  imageBytes: number
  hasImage: boolean
  /** The image is compressed (pglz, lz4 or zstd). */
  imageCompressed: boolean
  /**
   * Replay applies the image (BKPIMAGE_APPLY): an image logged only for wal_consistency_checking
   * does not have it.
   */
  imageApply: boolean
  /** Where the page's hole (bytes not stored) starts, and its length; 0 and 0 without one. */
  holeOffset: number
  holeLength: number
  /** Where its image and its data start in the record's `bytes`. */
  imageOffset: number
  dataOffset: number
  dataLength: number
}

/**
 * One decoded record. The reader reuses this object for every record: copy what you keep.
 */
export interface WalRecord {
  /** Where it starts, in bytes from 0/0. */
  lsn: number
  /** xl_tot_len: the record's bytes, images included, without alignment or page headers. */
  totalLength: number
  /** Bytes it occupies in WAL: aligned to 8 and, after an XLOG_SWITCH, the rest of the segment. */
  footprint: number
  xid: number
  /** The top-level xid of a subtransaction's record, where the record names it (wal_level logical). */
  topLevelXid: number | null
  rmid: number
  info: number
  /** Sum of the images' stored sizes: what pg_get_wal_stats counts as fpi_size. */
  imageBytes: number
  /** The first `blockCount` entries are this record's block references (the objects are reused). */
  blocks: BlockRef[]
  blockCount: number
  /** The bytes that hold the record (and its `view`), valid only during the callback. */
  bytes: Uint8Array
  view: DataView
  /** Where the record's main data starts in `bytes`, and its length. */
  mainDataOffset: number
  mainDataLength: number
}

/** What the reader needs to know of the server. */
export interface WalLayout {
  major: number
  blockSize: number
  segmentSize: number
}

export interface ReaderOptions {
  major: number
  blockSize: number
  segmentSize: number
  /** Check each record's CRC-32C: costs a pass over every byte, so tests turn it on. */
  verifyCrc?: boolean
  /**
   * `start` is the first byte of a page, not of a record (a segment file read from its start): the
   * rest of a record that began before it is skipped, and reading begins with the first record
   * that starts after it (see `firstRecordLsn`).
   */
  startsAtPage?: boolean
  /** Where the record before `start` starts, when known: the first record must point back to it. */
  previous?: number | null
}

/**
 * Parses the records between two record boundaries `start` and `end` (insert positions) from the
 * WAL bytes fed in order from the page that holds `start`. Every page header, every record length
 * and the xl_prev chain are checked; anything out of place throws WAL_UNREADABLE rather than
 * yielding a wrong number.
 */
export class WalReader {
  /**
   * The options every record reads, copied into the reader: the caller's options object (a spread,
   * as a rule) had another hidden class with each reader, and V8 threw away the code it had
   * optimised for the reader before, at each new one (three deoptimisations a window read).
   */
  private readonly major: number
  private readonly blockSize: number
  private readonly segmentSize: number
  private readonly verifyCrc: boolean
  private readonly magic: number
  private readonly page: Uint8Array
  private readonly pageView: DataView
  private pageFill = 0
  /** LSN of the page being filled. */
  private pageLsn: number
  /** Where the next record starts. */
  private next: number
  private previousLsn: number | null = null
  /** A record that continues on the next page: its length and its bytes so far, in `spill`. */
  private partial: { lsn: number; length: number; filled: number } | null = null
  /** Where a record that crosses pages is put together: one buffer, grown as needed, for all of them. */
  private spill = new Uint8Array(0)
  private spillView = new DataView(this.spill.buffer)
  /** After an XLOG_SWITCH, the pages up to the next segment are padding with zeroed headers. */
  private skipUntil = 0
  /** With `startsAtPage`: bytes of an earlier record still to skip, null until the first page says. */
  private continuation: number | null = 0
  private firstRecord: number | null = null
  private firstPrevious: number | null = null
  /** Set by `stopAtEndOfWal`: zeros or a recycled page where the next record would be end the reading. */
  private endOfWalAllowed = false
  private walEnded: number | null = null
  private reading = 0
  private readonly record: WalRecord = {
    lsn: 0,
    totalLength: 0,
    footprint: 0,
    xid: 0,
    topLevelXid: null,
    rmid: 0,
    info: 0,
    imageBytes: 0,
    // Made holding a block: an empty array changes its kind at the first object stored, and V8
    // would throw away the code it optimised for the previous reader's array.
    blocks: [emptyBlock()],
    blockCount: 0,
    bytes: new Uint8Array(0),
    view: new DataView(new ArrayBuffer(0)),
    mainDataOffset: 0,
    mainDataLength: 0,
  }

  /**
   * Where reading stops: the window's end, or the end of the page before it when it ends right
   * after a page header. Infinite until the end is known (see `endAt`).
   */
  private end = Number.POSITIVE_INFINITY

  /**
   * `end` is null while the window is still being written: pages are then read only once full, and
   * only bytes before the end may be fed until `endAt` gives it.
   */
  constructor(
    options: ReaderOptions,
    start: number,
    end: number | null,
    private readonly onRecord: (record: WalRecord) => void,
  ) {
    const magic = PAGE_MAGIC[options.major]
    if (magic === undefined) throw unreadable(`no page format is known for PostgreSQL ${options.major}`)
    this.major = options.major
    this.blockSize = options.blockSize
    this.segmentSize = options.segmentSize
    this.verifyCrc = options.verifyCrc ?? false
    this.magic = magic
    this.page = new Uint8Array(options.blockSize)
    this.pageView = new DataView(this.page.buffer)
    this.pageLsn = start - (start % options.blockSize)
    this.next = start
    this.previousLsn = options.previous ?? null
    if (options.startsAtPage) {
      if (start !== this.pageLsn) throw new Error('with startsAtPage, start is the first byte of a page')
      this.continuation = null
    }
    if (end !== null) this.endAt(end)
  }

  /** Sets the window's end once it is known, and reads what was fed before it and is now complete. */
  endAt(end: number): void {
    if (this.end !== Number.POSITIVE_INFINITY) throw new Error('the window end is set once')
    if (end < this.next) throw unreadable(`the window's end ${formatLsn(end)} lies before records already read`)
    // An insert position right after a page header: the last record ended on the page before.
    const intoPage = end % this.blockSize
    this.end =
      intoPage === (end % this.segmentSize < this.blockSize ? XLOG_LONG_PAGE_HEADER : XLOG_SHORT_PAGE_HEADER)
        ? end - intoPage
        : end
    this.push(new Uint8Array(0))
  }

  /** Where the bytes to feed start: the first byte of the page that holds `start`. */
  get readFrom(): number {
    return this.pageLsn
  }

  /** Where the first record read starts; null before it is found. */
  get firstRecordLsn(): number | null {
    return this.firstRecord
  }

  /** The record the first record read points back to (its xl_prev); null before it is found. */
  get firstRecordPrevious(): number | null {
    return this.firstPrevious
  }

  /** Where the last record read ends (aligned): the next one's start. */
  get position(): number {
    return this.next
  }

  /** The record being decoded, or else the page being read: where a failure is. */
  get failureLsn(): number {
    return this.reading
  }

  /** Where the last record read started; null before the first. */
  get lastRecordLsn(): number | null {
    return this.previousLsn
  }

  /**
   * From here on, the WAL may end before `end`: where the next record would start, a zero length
   * (the rest of a page the server had not filled) or a page that is zeros or another place's (a
   * recycled segment's old pages) ends the reading there (see `endOfWal`). Anything else out of
   * place still throws. For the newest segment of a copy of pg_wal.
   */
  stopAtEndOfWal(): void {
    this.endOfWalAllowed = true
  }

  /** Where the WAL ended before `end` (see `stopAtEndOfWal`); null while it has not. */
  get endOfWal(): number | null {
    return this.walEnded
  }

  /** A record that began before the bytes fed so far and did not end in them: its start. */
  get unfinishedRecordLsn(): number | null {
    return this.partial?.lsn ?? null
  }

  /** True once every record before `end` has been read. */
  get done(): boolean {
    return this.next >= this.end && this.partial === null
  }

  /** Feeds the next bytes of WAL, in order. */
  push(chunk: Uint8Array): void {
    let offset = 0
    let chunkView: DataView | null = null
    while (!this.done) {
      const usable = Math.min(this.page.length, this.end - this.pageLsn)
      if (usable <= 0)
        throw unreadable(`the record at ${formatLsn(this.partial?.lsn ?? this.next)} runs past the window's end`)
      if (this.pageFill === 0 && chunk.length - offset >= usable) {
        // A page wholly inside the chunk is read where it lies: copying every page would cost a
        // pass over the whole window.
        chunkView ??= new DataView(chunk.buffer, chunk.byteOffset, chunk.byteLength)
        this.readPage(chunk, chunkView, offset, usable)
        offset += usable
      } else {
        const take = Math.min(chunk.length - offset, this.page.length - this.pageFill)
        this.page.set(chunk.subarray(offset, offset + take), this.pageFill)
        this.pageFill += take
        offset += take
        if (this.pageFill < this.page.length && this.pageFill < usable) return
        this.readPage(this.page, this.pageView, 0, Math.min(this.pageFill, usable))
      }
      this.pageLsn += this.page.length
      this.pageFill = 0
    }
  }

  /** Call after the last byte: throws when the window was not read to its end. */
  finish(): void {
    if (!this.done)
      throw unreadable(
        `the WAL ended at ${formatLsn(this.pageLsn + this.pageFill)}, before the window's end ${formatLsn(this.end)}`,
      )
  }

  /** The WAL ends at `lsn`, where the next record would start: nothing more is read. */
  private endWalAt(lsn: number): void {
    this.walEnded = lsn
    this.end = lsn
  }

  /** Reads the page at `bytes[base, base + length)`, `view` being a view of `bytes`. */
  private readPage(bytes: Uint8Array, view: DataView, base: number, length: number): void {
    if (this.pageLsn < this.skipUntil) return
    this.reading = this.partial?.lsn ?? this.pageLsn
    const magic = view.getUint16(base, true)
    const info = view.getUint16(base + 2, true)
    const address = getUint64(view, base + 8)
    if (
      this.endOfWalAllowed &&
      this.continuation === 0 &&
      ((magic === 0 && address === 0) || (magic === this.magic && address < this.pageLsn))
    ) {
      // A record begun on the page before and not continued: the server had not yet written the
      // page it goes on in (a copy of pg_wal taken while it writes). The WAL ends where it starts.
      this.endWalAt(this.partial?.lsn ?? Math.max(this.next, this.pageLsn))
      if (this.partial) this.next = this.partial.lsn
      this.partial = null
      return
    }
    if (magic !== this.magic)
      throw unreadable(
        `page ${formatLsn(this.pageLsn)} has magic 0x${magic.toString(16)}, not PostgreSQL ${this.major}'s 0x${this.magic.toString(16)}`,
      )
    if (address !== this.pageLsn)
      throw unreadable(
        `page ${formatLsn(this.pageLsn)} says it is page ${formatLsn(address)}: the segment was recycled before it was read`,
      )
    const segmentStart = this.pageLsn % this.segmentSize === 0
    if (segmentStart !== ((info & XLP_LONG_HEADER) !== 0))
      throw unreadable(`page ${formatLsn(this.pageLsn)} has the wrong header kind`)
    let position = segmentStart ? XLOG_LONG_PAGE_HEADER : XLOG_SHORT_PAGE_HEADER

    if (this.continuation !== 0) {
      // The first pages read may end a record that began before them: skipped, but only as far as
      // every page's header agrees on what is left of it.
      const remaining = (info & XLP_FIRST_IS_CONTRECORD) === 0 ? 0 : view.getUint32(base + 16, true)
      if (this.continuation !== null && remaining !== this.continuation)
        throw unreadable(
          `page ${formatLsn(this.pageLsn)} does not continue the record before it (${remaining} bytes said, ${this.continuation} expected)`,
        )
      if (remaining > RECORD_MAX_LENGTH)
        throw unreadable(`page ${formatLsn(this.pageLsn)} says ${remaining} bytes of a record continue on it`)
      const take = Math.min(remaining, length - position)
      this.continuation = remaining - take
      position += take
      if (this.continuation > 0) return
      position = maxAlign(position)
      this.next = this.pageLsn + position
    }

    if (this.partial) {
      const remaining = view.getUint32(base + 16, true)
      const missing = this.partial.length - this.partial.filled
      if ((info & XLP_FIRST_IS_CONTRECORD) === 0 || remaining !== missing) {
        throw unreadable(
          `page ${formatLsn(this.pageLsn)} does not continue the record at ${formatLsn(this.partial.lsn)} (${remaining} bytes said, ${missing} expected)`,
        )
      }
      const take = Math.min(missing, length - position)
      this.reserveSpill(this.partial.filled + take)
      this.spill.set(bytes.subarray(base + position, base + position + take), this.partial.filled)
      this.partial.filled += take
      position += take
      if (this.partial.filled < this.partial.length) return
      const { lsn } = this.partial
      this.partial = null
      this.next = this.pageLsn + maxAlign(position)
      this.decode(this.spill, this.spillView, 0, lsn, this.next)
      position = maxAlign(position)
    } else if (this.next < this.pageLsn + position) {
      this.next = this.pageLsn + position
    } else {
      position = this.next - this.pageLsn
    }

    while (position < length && this.pageLsn + position < this.end && this.pageLsn >= this.skipUntil) {
      const lsn = this.pageLsn + position
      if (lsn !== this.next) throw unreadable(`lost the record chain at ${formatLsn(lsn)}`)
      const totalLength = view.getUint32(base + position, true)
      if (totalLength === 0 && this.endOfWalAllowed) {
        this.endWalAt(lsn)
        return
      }
      if (totalLength < RECORD_HEADER || totalLength > RECORD_MAX_LENGTH)
        throw unreadable(`record at ${formatLsn(lsn)} has length ${totalLength}`)
      if (position + totalLength <= this.page.length) {
        if (position + totalLength > length) throw unreadable(`record at ${formatLsn(lsn)} runs past the window's end`)
        this.next = lsn + maxAlign(totalLength)
        this.decode(bytes, view, base + position, lsn, this.next)
        position = this.next - this.pageLsn
      } else {
        const take = length - position
        this.reserveSpill(take)
        this.spill.set(bytes.subarray(base + position, base + length), 0)
        this.partial = { lsn, length: totalLength, filled: take }
        return
      }
    }
  }

  /**
   * Room for `bytes` of a record that crosses pages, grown as its bytes arrive rather than to the
   * length its header claims: a damaged length is caught by the next page's header, before
   * memory follows it.
   */
  private reserveSpill(bytes: number): void {
    if (this.spill.length >= bytes) return
    const grown = new Uint8Array(Math.max(bytes, 2 * this.spill.length, 65_536))
    grown.set(this.spill.subarray(0, this.partial?.filled ?? 0))
    this.spill = grown
    this.spillView = new DataView(grown.buffer)
  }

  /** Decodes the record at `bytes[at, at + xl_tot_len)` that starts at `lsn`, the next one at `next`. */
  private decode(bytes: Uint8Array, view: DataView, at: number, lsn: number, next: number): void {
    const record = this.record
    this.reading = lsn
    record.lsn = lsn
    record.totalLength = view.getUint32(at, true)
    record.xid = view.getUint32(at + 4, true)
    const previous = getUint64(view, at + 8)
    record.info = view.getUint8(at + 16)
    record.rmid = view.getUint8(at + 17)
    record.topLevelXid = null
    record.imageBytes = 0
    record.blockCount = 0
    record.bytes = bytes
    record.view = view
    if (this.previousLsn !== null && previous !== this.previousLsn) {
      throw unreadable(
        `record at ${formatLsn(lsn)} points back to ${formatLsn(previous)}, not to ${formatLsn(this.previousLsn)}`,
      )
    }
    this.previousLsn = lsn
    if (this.firstRecord === null) {
      this.firstRecord = lsn
      this.firstPrevious = previous
    }
    if (this.verifyCrc) {
      const stored = view.getUint32(at + 20, true)
      if (recordCrc32c(bytes, at, at + RECORD_HEADER, at + record.totalLength) !== stored)
        throw unreadable(`record at ${formatLsn(lsn)} fails its CRC`)
    }
    this.decodeBlocks(view, at, record)
    record.footprint = next - lsn
    if (record.rmid === RM_XLOG_ID && (record.info & 0xf0) === XLOG_SWITCH) {
      const segment = this.segmentSize
      const nextSegment = lsn - (lsn % segment) + segment
      record.footprint = nextSegment - lsn
      this.skipUntil = nextSegment
      this.next = nextSegment
    }
    this.onRecord(record)
  }

  private decodeBlocks(view: DataView, at: number, record: WalRecord): void {
    const compressedFlags = this.major >= 15 ? 0x04 | 0x08 | 0x10 : 0x02
    const applyFlag = this.major >= 15 ? 0x02 : 0x04
    const end = at + record.totalLength
    let position = at + RECORD_HEADER
    let payload = 0
    let lastId = -1
    let haveRelation = false
    let tablespace = 0
    let database = 0
    let relNumber = 0
    // Read by hand, without closures or objects per record: a large batch is millions of records.
    while (end - position > payload) {
      const id = view.getUint8(position++)
      if (id === BLOCK_ID_DATA_SHORT) {
        if (position + 1 > end) throw this.tooShort(record)
        payload += view.getUint8(position)
        position += 1
        break
      }
      if (id === BLOCK_ID_DATA_LONG) {
        if (position + 4 > end) throw this.tooShort(record)
        payload += view.getUint32(position, true)
        position += 4
        break
      }
      if (id === BLOCK_ID_ORIGIN) {
        position += 2
        continue
      }
      if (id === BLOCK_ID_TOPLEVEL_XID) {
        if (position + 4 > end) throw this.tooShort(record)
        record.topLevelXid = view.getUint32(position, true)
        position += 4
        continue
      }
      if (id > XLR_MAX_BLOCK_ID || id <= lastId)
        throw unreadable(`record at ${formatLsn(record.lsn)} has block id ${id} out of place`)
      lastId = id
      if (position + 3 > end) throw this.tooShort(record)
      const forkFlags = view.getUint8(position)
      const dataLength = view.getUint16(position + 1, true)
      position += 3
      if (((forkFlags & BKPBLOCK_HAS_DATA) !== 0) !== dataLength > 0) {
        throw unreadable(`record at ${formatLsn(record.lsn)} has block data flags that do not match its length`)
      }
      payload += dataLength
      let imageBytes = 0
      let imageCompressed = false
      let imageApply = false
      let holeOffset = 0
      let holeLength = 0
      const hasImage = (forkFlags & BKPBLOCK_HAS_IMAGE) !== 0
      if (hasImage) {
        if (position + 5 > end) throw this.tooShort(record)
        imageBytes = view.getUint16(position, true)
        const imageInfo = view.getUint8(position + 4)
        imageCompressed = (imageInfo & compressedFlags) !== 0
        imageApply = (imageInfo & applyFlag) !== 0
        // A compressed image with a hole says the hole's length in 2 more bytes.
        const headerLength = imageCompressed && (imageInfo & BKPIMAGE_HAS_HOLE) !== 0 ? 7 : 5
        if (position + headerLength > end) throw this.tooShort(record)
        if ((imageInfo & BKPIMAGE_HAS_HOLE) !== 0) {
          holeOffset = view.getUint16(position + 2, true)
          holeLength = imageCompressed ? view.getUint16(position + 5, true) : this.blockSize - imageBytes
        }
        position += headerLength
        payload += imageBytes
        record.imageBytes += imageBytes
      }
      if ((forkFlags & BKPBLOCK_SAME_REL) === 0) {
        if (position + 12 > end) throw this.tooShort(record)
        tablespace = view.getUint32(position, true)
        database = view.getUint32(position + 4, true)
        relNumber = view.getUint32(position + 8, true)
        haveRelation = true
        position += 12
      } else if (!haveRelation) {
        throw unreadable(`record at ${formatLsn(record.lsn)} names the previous relation where there is none`)
      }
      if (position + 4 > end) throw this.tooShort(record)
      // Block objects are reused from record to record: reading a window allocates a handful, not millions.
      // Grown before it is read past its end: a read out of bounds would also throw optimised code away.
      if (record.blockCount === record.blocks.length) record.blocks.push(emptyBlock())
      const block = record.blocks[record.blockCount] as BlockRef
      block.tablespace = tablespace
      block.database = database
      block.relNumber = relNumber
      block.fork = forkFlags & 0x0f
      block.block = view.getUint32(position, true)
      block.imageBytes = imageBytes
      block.hasImage = hasImage
      block.imageCompressed = imageCompressed
      block.imageApply = imageApply
      block.holeOffset = holeOffset
      block.holeLength = holeLength
      block.dataLength = dataLength
      record.blockCount += 1
      position += 4
    }
    if (end - position !== payload)
      throw unreadable(
        `record at ${formatLsn(record.lsn)} has ${end - position} bytes after its headers, its headers say ${payload}`,
      )
    // After the headers: each block's image, then its data, in block order; then the main data.
    for (let i = 0; i < record.blockCount; i++) {
      const block = record.blocks[i] as BlockRef
      block.imageOffset = position
      position += block.imageBytes
      block.dataOffset = position
      position += block.dataLength
    }
    record.mainDataOffset = position
    record.mainDataLength = end - position
  }

  private tooShort(record: WalRecord): WalcostError {
    return unreadable(`record at ${formatLsn(record.lsn)} has headers longer than the record`)
  }
}

function emptyBlock(): BlockRef {
  return {
    tablespace: 0,
    database: 0,
    relNumber: 0,
    fork: 0,
    block: 0,
    imageBytes: 0,
    hasImage: false,
    imageCompressed: false,
    imageApply: false,
    holeOffset: 0,
    holeLength: 0,
    imageOffset: 0,
    dataOffset: 0,
    dataLength: 0,
  }
}

/** An LSN as PostgreSQL prints it (`16/B374D848`) in bytes from 0/0. */
export function parseLsn(text: string): number {
  const [high, low] = text.split('/')
  return Number.parseInt(high ?? '', 16) * 2 ** 32 + Number.parseInt(low ?? '', 16)
}

/** An LSN as PostgreSQL prints it: high and low 32 bits in hex. */
export function formatLsn(bytes: number): string {
  return `${Math.floor(bytes / 2 ** 32)
    .toString(16)
    .toUpperCase()}/${(bytes % 2 ** 32).toString(16).toUpperCase()}`
}

function unreadable(detail: string): WalcostError {
  return new WalcostError(
    'WAL_UNREADABLE',
    `the WAL could not be read back: ${detail}. Nothing was reported from it; measure again, and report this if it repeats.`,
  )
}
