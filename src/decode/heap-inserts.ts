// The rows a heap's INSERT and MULTI_INSERT records carry, and the bytes of their column values as
// pg_column_size() counts them: the logical bytes of a batch, read from its WAL instead of from a
// scan of the rows afterwards. Layouts: src/include/access/heapam_xlog.h, htup_details.h, varatt.h
// (the same in 14-18); the walk over the attributes follows heap_deform_tuple.
import type { BlockRef, WalRecord } from './reader.js'

const RM_HEAP2_ID = 9
const RM_HEAP_ID = 10
const XLOG_HEAP_OPMASK = 0x70
const XLOG_HEAP_INSERT = 0x00
const XLOG_HEAP2_MULTI_INSERT = 0x50
const XLOG_HEAP_INIT_PAGE = 0x80
/** offsetof(HeapTupleHeaderData, t_bits): WAL carries a tuple from here on. */
const TUPLE_BITS_OFFSET = 23
/** offsetof(HeapTupleHeaderData, t_infomask2), followed by t_infomask and t_hoff. */
const TUPLE_INFOMASK2_OFFSET = 18
/** SizeOfHeapHeader: t_infomask2, t_infomask, t_hoff before an INSERT's tuple. */
const HEAP_HEADER = 5
/** SizeOfMultiInsertTuple: datalen, t_infomask2, t_infomask, t_hoff before each MULTI_INSERT tuple. */
const MULTI_INSERT_TUPLE = 7
/** SizeOfHeapMultiInsert: flags, padding, ntuples, before the offsets. */
const MULTI_INSERT_HEADER = 4
const PAGE_HEADER = 24
const HEAP_NATTS_MASK = 0x07ff
const HEAP_HASNULL = 0x0001
const VARTAG_ONDISK = 18
/** VARLENA_EXTSIZE_MASK: the stored size in a TOAST pointer's va_extinfo. */
const EXTSIZE_MASK = 0x3fffffff

/**
 * How one attribute is stored in a heap tuple, by attribute number (dropped ones included, since
 * tuples keep their place): what decoding a tuple from WAL needs.
 */
export interface StoredAttribute {
  /** pg_attribute.attlen: bytes, or -1 (varlena) or -2 (C string). */
  length: number
  align: 'c' | 's' | 'i' | 'd'
  /** Counted in logical bytes: not dropped, and stored (not a virtual generated column). */
  counted: boolean
  /** A virtual generated column (PostgreSQL 18): computed when read, not stored. */
  virtual: boolean
}

/**
 * A table's attributes as tuples are decoded: where every attribute has a fixed length, a tuple
 * without nulls has one size and one count of bytes, known before reading any (a metrics table's
 * rows, typically), and only its length is checked.
 */
export interface TupleShape {
  attributes: readonly StoredAttribute[]
  /** Where the last attribute ends, from the start of the values, and the bytes counted; null with a varlena or cstring. */
  fixed: { end: number; counted: number } | null
}

/** The shape of a table's tuples, worked out once per window. */
export function tupleShape(attributes: readonly StoredAttribute[]): TupleShape {
  let end = 0
  let counted = 0
  for (const attribute of attributes) {
    if (attribute.length <= 0) return { attributes, fixed: null }
    end = align(end, alignments[attribute.align]) + attribute.length
    if (attribute.counted) counted += attribute.length
  }
  return { attributes, fixed: { end, counted } }
}

/** What the heap's insert records of one relation hold. */
export interface InsertedRows {
  rows: number
  /** Sum of pg_column_size() over the counted columns of those rows. */
  bytes: number
  /** Rows the records do not carry readably (a compressed image without the tuple, a shape not expected). */
  unread: number
}

/** Whether `record` is a heap INSERT or MULTI_INSERT: the kinds that carry new rows. */
export function isHeapInsert(record: WalRecord): boolean {
  return (
    (record.rmid === RM_HEAP_ID && (record.info & XLOG_HEAP_OPMASK) === XLOG_HEAP_INSERT) ||
    (record.rmid === RM_HEAP2_ID && (record.info & XLOG_HEAP_OPMASK) === XLOG_HEAP2_MULTI_INSERT)
  )
}

/** Adds the rows of an insert record into block 0 to `into`, decoding each tuple. */
export function addInsertedRows(record: WalRecord, shape: TupleShape, blockSize: number, into: InsertedRows): void {
  const block = record.blocks[0] as BlockRef
  const view = record.view
  const main = record.mainDataOffset
  if (record.rmid === RM_HEAP_ID) {
    into.rows += 1
    if (block.dataLength >= HEAP_HEADER) {
      const at = block.dataOffset
      addTuple(into, tupleBytes(record, at, at + HEAP_HEADER, at + block.dataLength, shape))
    } else {
      const offset = record.mainDataLength >= 2 ? view.getUint16(main, true) : 0
      addTuple(into, tupleFromImage(record, block, offset, shape, blockSize))
    }
    return
  }
  if (record.mainDataLength < MULTI_INSERT_HEADER) {
    into.unread += 1
    return
  }
  const count = view.getUint16(main + 2, true)
  into.rows += count
  if (block.dataLength === 0) {
    // The page's image holds them; the offsets are in the main data, except on a page made new.
    if ((record.info & XLOG_HEAP_INIT_PAGE) !== 0 || record.mainDataLength < MULTI_INSERT_HEADER + 2 * count) {
      into.unread += count
      return
    }
    for (let i = 0; i < count; i++) {
      const offset = view.getUint16(main + MULTI_INSERT_HEADER + 2 * i, true)
      addTuple(into, tupleFromImage(record, block, offset, shape, blockSize))
    }
    return
  }
  let at = block.dataOffset
  const end = block.dataOffset + block.dataLength
  for (let i = 0; i < count; i++) {
    // Each tuple header is aligned to 2 bytes from the start of the block's data.
    at += (at - block.dataOffset) % 2
    if (at + MULTI_INSERT_TUPLE > end) {
      into.unread += count - i
      return
    }
    const body = at + MULTI_INSERT_TUPLE
    const bodyEnd = body + view.getUint16(at, true)
    addTuple(into, bodyEnd > end ? null : tupleBytes(record, at + 2, body, bodyEnd, shape))
    at = bodyEnd
  }
}

function addTuple(into: InsertedRows, size: number | null): void {
  if (size === null) into.unread += 1
  else into.bytes += size
}

/**
 * The tuple at line pointer `offset` of the block's image: an insert that took the page's first
 * image after a checkpoint carries the page, not the tuple. Compressed images are not decoded.
 */
function tupleFromImage(
  record: WalRecord,
  block: BlockRef,
  offset: number,
  shape: TupleShape,
  blockSize: number,
): number | null {
  if (!block.hasImage || block.imageCompressed) return null
  // A position in the page maps into the image by skipping the hole.
  const imageAt = (pagePosition: number) =>
    block.imageOffset + (pagePosition < block.holeOffset ? pagePosition : pagePosition - block.holeLength)
  const pointerAt = PAGE_HEADER + 4 * (offset - 1)
  const holeEnd = block.holeOffset + block.holeLength
  // Line pointers lie before the hole and tuples after it (a page without one has neither limit).
  if (offset < 1 || holeEnd > blockSize || (block.holeLength > 0 && pointerAt + 4 > block.holeOffset)) return null
  const pointer = record.view.getUint32(imageAt(pointerAt), true)
  const tupleOffset = pointer & 0x7fff
  const tupleLength = pointer >>> 17
  if (tupleOffset < Math.max(holeEnd, pointerAt + 4) || tupleOffset + tupleLength > blockSize) return null
  const tuple = imageAt(tupleOffset)
  return tupleBytes(record, tuple + TUPLE_INFOMASK2_OFFSET, tuple + TUPLE_BITS_OFFSET, tuple + tupleLength, shape)
}

const alignments = { c: 1, s: 2, i: 4, d: 8 } as const

/**
 * pg_column_size() summed over the counted attributes of the tuple whose bytes from t_bits on are
 * `bytes[from, to)` of the record; null where the tuple does not fit the table's attributes.
 * t_infomask2, t_infomask and t_hoff are at `header`, in that order and layout, in a page as in
 * both WAL headers.
 */
function tupleBytes(
  record: WalRecord,
  header: number,
  from: number,
  to: number,
  { attributes, fixed }: TupleShape,
): number | null {
  const { bytes, view } = record
  const natts = view.getUint16(header, true) & HEAP_NATTS_MASK
  if (natts !== attributes.length) return null
  const hasNulls = (view.getUint16(header + 2, true) & HEAP_HASNULL) !== 0
  const hoff = view.getUint8(header + 4)
  // Offsets count from the start of the values, which t_hoff keeps aligned to 8 in the page.
  const values = from + hoff - TUPLE_BITS_OFFSET
  if (values > to) return null
  if (fixed !== null && !hasNulls) return values + fixed.end <= to ? fixed.counted : null
  let offset = 0
  let total = 0
  for (let i = 0; i < natts; i++) {
    if (hasNulls && ((bytes[from + (i >> 3)] ?? 0) & (1 << (i & 7))) === 0) continue
    const attribute = attributes[i] as StoredAttribute
    const { length } = attribute
    let size: number
    let counted: number
    if (length > 0) {
      offset = align(offset, alignments[attribute.align])
      size = length
      counted = length
    } else if (length === -1) {
      // A varlena's first byte is never 0: a 0 there is padding before a 4-byte-header value.
      if (values + offset >= to) return null
      if (bytes[values + offset] === 0) offset = align(offset, alignments[attribute.align])
      const at = values + offset
      if (at >= to) return null
      const first = bytes[at] ?? 0
      if (first === 0x01) {
        // A TOAST pointer: pg_column_size() gives the size stored out of line.
        if (at + 2 > to || bytes[at + 1] !== VARTAG_ONDISK || at + 18 > to) return null
        size = 18
        counted = view.getUint32(at + 2 + 4, true) & EXTSIZE_MASK
      } else if ((first & 0x01) === 1) {
        size = first >>> 1
        counted = size
      } else {
        if (at + 4 > to) return null
        size = view.getUint32(at, true) >>> 2
        counted = size
      }
    } else {
      offset = align(offset, alignments[attribute.align])
      const at = values + offset
      const zero = bytes.indexOf(0, at)
      if (zero < 0 || zero >= to) return null
      size = zero - at + 1
      counted = size
    }
    if (values + offset + size > to) return null
    if (attribute.counted) total += counted
    offset += size
  }
  return total
}

const align = (offset: number, to: number) => Math.ceil(offset / to) * to
