import { seededRandom } from '../core/random.js'
import { LINE_POINTER, PAGE_HEADER } from '../core/units.js'
// How PostgreSQL lays out heap and index tuples (src/include/access/htup_details.h, itup.h,
// access/common/heaptuple.c): the sizes the WAL record formats are built from.

/** A column as the layout sees it: storage length (-1: varlena) and alignment, with its statistics. */
export interface ColumnLayout {
  name: string
  /** pg_type.typlen: bytes of a fixed-width value, -1 for varlena (text, numeric, jsonb, ...). */
  length: number
  /** pg_type.typalign: 'c' 1, 's' 2, 'i' 4, 'd' 8. */
  align: 'c' | 's' | 'i' | 'd'
  /** Average stored width of a non-null value in bytes (pg_stats.avg_width: headers included). */
  avgWidth: number
  /** Share of rows where the column is NULL. */
  nullFraction: number
}

export const MAXALIGN = 8
const ALIGNMENT = { c: 1, s: 2, i: 4, d: 8 } as const
export const alignUp = (offset: number, to: number) => Math.ceil(offset / to) * to
export const maxAlign = (offset: number) => alignUp(offset, MAXALIGN)
export const shortAlign = (offset: number) => alignUp(offset, 2)

/** Bytes of one value and the alignment it starts at: short varlenas (< 127 bytes) are not aligned. */
function valueLayout(column: ColumnLayout): { size: number; align: number } {
  if (column.length > 0) return { size: column.length, align: ALIGNMENT[column.align] }
  const size = Math.max(1, column.avgWidth)
  return { size, align: size <= 127 ? 1 : ALIGNMENT[column.align] }
}

/**
 * Bytes of the data area for the given columns, with nulls skipped and each value aligned; and
 * whether its length modulo 8 varies from row to row. Widths of variable-width values vary around
 * their average, so after one the remainder is unknown, until an 8-aligned value fixes it again.
 */
function dataLength(columns: ColumnLayout[], isNull: boolean[]): { length: number; varies: boolean } {
  let offset = 0
  let varies = false
  columns.forEach((column, i) => {
    if (isNull[i]) return
    const { size, align } = valueLayout(column)
    if (align === MAXALIGN) varies = false
    offset = alignUp(offset, align) + size
    if (column.length < 0) varies = true
  })
  return { length: offset, varies }
}

const SAMPLES = 4_000

/**
 * The expected value of `size(isNull)` over rows whose columns are NULL with their null fractions,
 * averaged over a fixed set of sampled null patterns (alignment makes the size non-linear in them).
 */
function expectedOver(columns: ColumnLayout[], size: (isNull: boolean[]) => number): number {
  if (columns.every((column) => column.nullFraction <= 0)) return size(columns.map(() => false))
  const next = seededRandom(7)
  let total = 0
  for (let sample = 0; sample < SAMPLES; sample++) total += size(columns.map((column) => next() < column.nullFraction))
  return total / SAMPLES
}

/** Heap tuple header: 23 bytes, plus a null bitmap when a value is NULL, MAXALIGNed (t_hoff). */
function heapHeader(columnCount: number, anyNull: boolean): number {
  return maxAlign(23 + (anyNull ? Math.ceil(columnCount / 8) : 0))
}

/**
 * Rounds up to MAXALIGN; where the length modulo 8 varies from row to row, by the average padding
 * over the eight remainders (3.5) rather than what the average width alone would give.
 */
function padded(size: number, varies: boolean): number {
  return varies ? size + 3.5 : maxAlign(size)
}

export interface HeapTupleSizes {
  /** t_len: header, null bitmap, aligned data. */
  tupleLength: number
  /** MAXALIGN(t_len): its space on the page, before the line pointer. */
  onPage: number
  /** MAXALIGN(t_len + 31): the space of its XLOG_HEAP_INSERT record in WAL. */
  insertRecordAligned: number
}

/** Expected sizes of a heap tuple and of the record that inserts it. */
export function heapTupleSizes(columns: ColumnLayout[]): HeapTupleSizes {
  const tuple = (isNull: boolean[]) => {
    const data = dataLength(columns, isNull)
    return { length: heapHeader(columns.length, isNull.some(Boolean)) + data.length, varies: data.varies }
  }
  return {
    tupleLength: expectedOver(columns, (isNull) => tuple(isNull).length),
    onPage: expectedOver(columns, (isNull) => {
      const { length, varies } = tuple(isNull)
      return padded(length, varies)
    }),
    insertRecordAligned: expectedOver(columns, (isNull) => {
      const { length, varies } = tuple(isNull)
      return padded(length + 31, varies)
    }),
  }
}

/** Expected B-tree index tuple size: 8-byte header (16 with a null bitmap) and aligned keys, MAXALIGNed. */
export function indexTupleSize(columns: ColumnLayout[]): number {
  return expectedOver(columns, (isNull) => {
    const data = dataLength(columns, isNull)
    return padded((isNull.some(Boolean) ? 16 : 8) + data.length, data.varies)
  })
}

/** Expected sum of the non-null values' stored sizes: pg_column_size of the columns, as logicalBytes counts. */
export function logicalRowBytes(columns: ColumnLayout[]): number {
  return columns.reduce((sum, column) => sum + (1 - column.nullFraction) * valueLayout(column).size, 0)
}

/** MaxHeapTuplesPerPage for 8 kB pages. */
const MAX_HEAP_TUPLES_PER_PAGE = 291

/** Rows a heap page takes, tuples of `onPage` bytes and their line pointers, less the room fillfactor saves. */
export function heapRowsPerPage(blockSize: number, fillfactor: number, onPage: number): number {
  const saveFree = (blockSize * (100 - fillfactor)) / 100
  return Math.max(
    1,
    Math.min(MAX_HEAP_TUPLES_PER_PAGE, Math.floor((blockSize - PAGE_HEADER - saveFree) / (onPage + LINE_POINTER))),
  )
}
