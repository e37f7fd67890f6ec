import { integer } from '../core/format.js'
import { LINE_POINTER, PAGE_HEADER } from '../core/units.js'
import { pagesToMerge } from '../measure/pending-list.js'
import { GIN_SPECIAL, type GinInsertCost, type GinPostings, predictGinPostings } from './gin-postings.js'
import { maxAlign } from './layout.js'

// GIN with fastupdate (the default): a row's entries go to the pending list, and once the list
// passes gin_pending_list_limit the insert that passed it merges the list into the index
// (ginfast.c). Steady ingest pays both: the list's records a row, and the merge's over the rows of
// a list.

/** XLOG_GIN_UPDATE_META_PAGE before the entries: 24 + the metapage's block (20) + the tail's (8) + 2 + ginxlogUpdateMeta (88). */
const UPDATE_META = 142
/** XLOG_GIN_INSERT_LISTPAGE before the entries it carries (24 + 20 + 2 + 8). */
const INSERT_LISTPAGE = 54
/** List pages XLOG_GIN_DELETE_LISTPAGE frees at most (GIN_NDELETE_AT_ONCE). */
const DELETE_AT_ONCE = 16
/** XLOG_GIN_DELETE_LISTPAGE: 24 + the metapage's block (24) + 2 + GinMetaPageData and the count (52), and 8 a page freed. */
const deleteListPageBytes = (pages: number) => 102 + 8 * pages

/**
 * What ginInsertCleanup's accumulator (ginbulk.c) holds a key, in bytes: its node (about 56, in
 * chunks of 128), its key's copy and its first TID array of five (about 40 each, with their chunk
 * headers); and a TID beyond those, its arrays doubling as they fill.
 */
const ACCUMULATED = { key: 136, tid: 9 }

/** What a sample says of a GIN index with a pending list: a row's entries, the limit, and its keys. */
export interface PendingListShape {
  entriesPerRow: number
  /** Bytes of the entry tuples a row adds (each an 8-byte header and its key, MAXALIGNed). */
  entryBytesPerRow: number
  /** gin_pending_list_limit, in bytes: the index's own or the server's. */
  pendingLimitBytes: number
  /** work_mem, in bytes: the memory a merge run by an insert gathers keys in before it writes them. */
  mergeMemoryBytes: number
  /** The keys' posting lists on the table's last pages (null where they cannot be read). */
  postings: GinPostings | null
}

/** A pending list's records a row: the list's own, and its merge's where the keys could be read. */
export interface PendingListCost {
  bytesPerRow: number
  alignedPerRow: number
  recordsPerRow: number
  splitsPerRow: number
  imageBytesPerRow: number
  /** Rows a list holds when it is merged. */
  rowsPerMerge: number
  /** Rows whose entries a merge writes at once: fewer than a list's when they outgrow the memory. */
  rowsPerFlush: number
  merge: GinInsertCost | null
  assumptions: string[]
}

/**
 * Rows the merge gathers before it writes them (the whole list, unless its keys and TIDs outgrow
 * `memory` first): a key is gathered once, however many of these rows hold it.
 */
function rowsPerFlush(postings: GinPostings, rowsPerMerge: number, memory: number): number {
  const gathered = (rows: number) =>
    postings.groups.reduce((sum, group) => {
      const inRows = group.occurrences / postings.windowRows
      const keys = group.keys * (1 - (1 - inRows) ** rows)
      return sum + keys * (ACCUMULATED.key + group.tupleBytes) + group.keys * inRows * rows * ACCUMULATED.tid
    }, 0)
  if (gathered(rowsPerMerge) <= memory) return rowsPerMerge
  let low = 1
  let high = rowsPerMerge
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2)
    if (gathered(middle) <= memory) low = middle
    else high = middle
  }
  return low
}

/**
 * A row's entries written to the pending list: one XLOG_GIN_UPDATE_META_PAGE a row carrying them
 * to the list's tail, and an XLOG_GIN_INSERT_LISTPAGE for each page the list grows by (the row that
 * starts the page carried there instead). Every `rowsPerMerge` rows, the merge: the keys of
 * `rowsPerFlush` rows written into the tree at a time (gin-postings.ts), and the list's pages freed,
 * 16 to an XLOG_GIN_DELETE_LISTPAGE.
 */
export function predictPendingList(name: string, shape: PendingListShape, blockSize: number): PendingListCost {
  const { entriesPerRow: entries, entryBytesPerRow: bytes } = shape
  const pageRoom = blockSize - PAGE_HEADER - GIN_SPECIAL
  const rowsPerPage = Math.max(1, Math.floor(pageRoom / Math.max(1, bytes + LINE_POINTER * entries)))
  const rowsPerMerge = pagesToMerge(shape.pendingLimitBytes) * rowsPerPage
  const meta = UPDATE_META + bytes
  const list = {
    bytesPerRow: meta + INSERT_LISTPAGE / rowsPerPage,
    alignedPerRow: maxAlign(meta) + maxAlign(INSERT_LISTPAGE) / rowsPerPage,
    recordsPerRow: 1 + 1 / rowsPerPage,
  }
  const limit = `${integer(shape.pendingLimitBytes / 1024)} kB`
  if (!shape.postings) {
    return {
      ...list,
      splitsPerRow: 0,
      imageBytesPerRow: 0,
      rowsPerMerge,
      rowsPerFlush: rowsPerMerge,
      merge: null,
      assumptions: [
        `${name}: written to its pending list, merged into the index every ${integer(rowsPerMerge)} rows or so (gin_pending_list_limit ${limit}); the merge's cost is not predicted, as its operator class's keys cannot be read on the table`,
      ],
    }
  }
  const flush = rowsPerFlush(shape.postings, rowsPerMerge, shape.mergeMemoryBytes)
  const merge = predictGinPostings(shape.postings, blockSize, flush)
  const pagesPerFlush = flush / rowsPerPage
  const deletes = Math.ceil(pagesPerFlush / DELETE_AT_ONCE)
  const freed = deleteListPageBytes(pagesPerFlush / deletes)
  return {
    bytesPerRow: list.bytesPerRow + merge.bytesPerRow + (deletes * freed) / flush,
    alignedPerRow: list.alignedPerRow + merge.alignedPerRow + (deletes * maxAlign(freed)) / flush,
    recordsPerRow: list.recordsPerRow + merge.recordsPerRow + deletes / flush,
    splitsPerRow: merge.splitsPerRow,
    imageBytesPerRow: merge.imageBytesPerRow,
    rowsPerMerge,
    rowsPerFlush: flush,
    merge,
    assumptions: [
      `${name}: written to its pending list (${integer(rowsPerPage)} rows a page), merged into the index every ${integer(rowsPerMerge)} rows (gin_pending_list_limit ${limit})${flush < rowsPerMerge ? `, ${integer(flush)} rows at a time as work_mem (${integer(shape.mergeMemoryBytes / 1024)} kB) holds their keys` : ''}: each key of those rows written once with their TIDs, its posting list as read on the table's last ${integer(shape.postings.windowRows)} rows`,
    ],
  }
}
