import { integer, percent, roundOne } from '../core/format.js'
import { LINE_POINTER, PAGE_HEADER } from '../core/units.js'
import { predictPendingList } from './gin-pending-list.js'
import { type GinPostings, predictGinPostings } from './gin-postings.js'
import type { RangeArrival } from './gist-ranges.js'
import { maxAlign } from './layout.js'

// Record models of the access methods other than B-tree, from their WAL records (gin/ginxlog.h,
// gist/gistxlog.h, hash/hash_xlog.h): the header (24), the first block reference (20: its header,
// RelFileLocator and block number), a further block of the same relation (8), a short main-data
// header (2).

/** GISTPageOpaqueData at the end of a GiST page. */
const GIST_SPECIAL = 16
/** A hash index tuple holds only the key's 32-bit hash code: an 8-byte header and 4 bytes, MAXALIGNed. */
const HASH_TUPLE = 16
/**
 * A bucket split's records besides the moved tuples: SPLIT_ALLOCATE_PAGE (~71 bytes), SPLIT_PAGE
 * without its image (~120), SPLIT_COMPLETE (~58), SPLIT_CLEANUP (~44), and the overflow page
 * added, squeezed and cleaned around it; about 8 records a split on random keys.
 */
const HASH_SPLIT = { bytes: 350, records: 8 }

/** What a sample of the table says about a GIN index: entries a row, and their tuples' bytes. */
export interface GinShape {
  entriesPerRow: number
  /** Bytes of the entry tuples a row adds (each an 8-byte header and its key, MAXALIGNed). */
  entryBytesPerRow: number
  /** The fastupdate storage parameter (on unless the index turns it off). */
  fastupdate: boolean
  /** gin_pending_list_limit, in bytes: the index's own or the server's. */
  pendingLimitBytes: number
  /** work_mem, in bytes: what a merge of the pending list gathers keys in. */
  mergeMemoryBytes: number
  /** Operator classes whose entries the sample cannot count: one entry a value is assumed. */
  unsampled: string[]
  /** Its keys' posting lists on the table's last pages (null where they cannot be read). */
  postings: GinPostings | null
}

/** An index's per-row records, as predictIndex returns them for every access method. */
export interface MethodPrediction {
  bytesPerRow: number
  alignedPerRow: number
  recordsPerRow: number
  tupleSize: number
  splitsPerRow: number
  /** Page images logged by design (not because of a checkpoint), bytes per row. */
  imageBytesPerRow: number
  assumptions: string[]
}

/**
 * GIN with fastupdate (the default): each row's entries go to the pending list, merged into the
 * tree once it passes its limit (gin-pending-list.ts). Without fastupdate each entry goes straight
 * into the entry tree, rewriting its key's posting list or adding to its posting tree
 * (gin-postings.ts).
 */
export function predictGin(name: string, shape: GinShape, blockSize: number): MethodPrediction {
  const { entriesPerRow: entries, entryBytesPerRow: bytes } = shape
  const assumptions = shape.unsampled.map(
    (opclass) => `${name}: entries of ${opclass} not counted on the sample, one a value assumed`,
  )
  const entryLine = `${name}: GIN, ${roundOne(entries)} entries a row of ${integer(bytes)} bytes on a sample of the table`
  const perEntry = entries > 0 ? bytes / entries : 0
  const modelled = (cost: Omit<MethodPrediction, 'tupleSize' | 'assumptions'>, said: string[]): MethodPrediction => ({
    bytesPerRow: cost.bytesPerRow,
    alignedPerRow: cost.alignedPerRow,
    recordsPerRow: cost.recordsPerRow,
    tupleSize: perEntry,
    splitsPerRow: cost.splitsPerRow,
    imageBytesPerRow: cost.imageBytesPerRow,
    assumptions: [...assumptions, ...said],
  })
  if (!shape.fastupdate && shape.postings) {
    const cost = predictGinPostings(shape.postings, blockSize)
    return modelled(cost, [
      `${entryLine}; fastupdate off: ${percent(1 - cost.treeShare)} of entries rewrite their key's entry tuple with its posting list (${integer(cost.rewrittenTuple)} bytes on average), ${percent(cost.treeShare)} add to a posting tree; posting lists read on the table's last ${integer(shape.postings.windowRows)} rows, each key's TIDs in the table counted on a sample spread over it, for rows added at the table's current size (posting lists lengthen as it grows)`,
    ])
  }
  if (!shape.fastupdate) {
    // XLOG_GIN_INSERT on an entry leaf: 24 + 20 + 2 + flags, the offset and the tuple.
    return {
      bytesPerRow: entries * (50 + perEntry),
      alignedPerRow: entries * maxAlign(50 + perEntry),
      recordsPerRow: entries,
      tupleSize: perEntry,
      splitsPerRow: 0,
      imageBytesPerRow: 0,
      assumptions: [
        ...assumptions,
        `${entryLine}; fastupdate off: one entry-tree insert an entry estimated, as its operator class's keys cannot be read on the table; posting lists and splits not modelled`,
      ],
    }
  }
  const cost = predictPendingList(name, shape, blockSize)
  return modelled(cost, [entryLine, ...cost.assumptions])
}

/** What a sample says about a GiST index on a range: how its keys arrive, in a table of this size. */
export interface GistShape {
  arrival: RangeArrival
  tableRows: number
}

/** Rank correlation of ranges with the rows' order from which they are taken to ascend. */
const ASCENDING_RANGES = 0.9

/**
 * Leaf capacity of a GiST page, in tuples: inserts leave no free space (fillfactor only applies to
 * a build).
 */
export const gistCapacity = (tupleSize: number, blockSize: number) =>
  Math.floor((blockSize - PAGE_HEADER - GIST_SPECIAL) / (tupleSize + LINE_POINTER))

/**
 * GiST: XLOG_GIST_PAGE_UPDATE a row (24 + 20 + 2 + 4 + the leaf tuple). A leaf splits when full,
 * after about ln 2 of a page of rows as for random B-tree keys, or half a page where ranges ascend
 * (the split's left half receives no more); the split record carries every tuple of the split
 * page, and the parent takes a downlink update (one tuple deleted, two inserted). Ascending ranges
 * also widen the keys above their leaf (one more PAGE_UPDATE a level, 52 + the tuple) whenever a
 * range ends past those before it.
 */
export function predictGist(
  name: string,
  tupleSize: number,
  blockSize: number,
  shape: GistShape | null,
): MethodPrediction {
  const capacity = gistCapacity(tupleSize, blockSize)
  const correlation = shape?.arrival.correlation ?? null
  const ascending = shape !== null && (correlation ?? 0) >= ASCENDING_RANGES
  const fill = ascending ? 0.5 : Math.LN2
  const splitsPerRow = 1 / (fill * capacity)
  // Levels above the leaves, for a table of this size, pages as full as the leaves.
  const leafPages = (shape?.tableRows ?? 0) / (fill * capacity)
  const levelsAbove = leafPages > 1 ? Math.ceil(Math.log(leafPages) / Math.log(fill * capacity)) : 0
  const widened =
    ascending && levelsAbove > 0 ? shape.arrival.leafGrowth + (levelsAbove - 1) * shape.arrival.treeGrowth : 0
  const update = 50 + tupleSize
  const parent = 52 + tupleSize
  const split = 86 + (capacity + 1) * tupleSize
  const downlink = 52 + 2 * tupleSize
  const bytesPerRow = update + widened * parent + splitsPerRow * (split + downlink)
  return {
    bytesPerRow,
    alignedPerRow:
      maxAlign(update) + widened * maxAlign(parent) + splitsPerRow * (maxAlign(split) + maxAlign(downlink)),
    recordsPerRow: 1 + widened + 2 * splitsPerRow,
    tupleSize,
    splitsPerRow,
    imageBytesPerRow: 0,
    assumptions: [
      ascending
        ? `${name}: GiST on ranges that ascend with the rows (rank correlation ${roundOne(correlation ?? 0)} on the table's last rows), leaf tuples of ${tupleSize} bytes: leaves split in half and keep half; ${percent(shape.arrival.leafGrowth)} of rows widen their leaf's key in its parent and ${percent(levelsAbove > 1 ? shape.arrival.treeGrowth : 0)} the keys above (${levelsAbove + 1} levels for ${integer(shape.tableRows)} rows), on those rows`
        : `${name}: GiST, leaf tuples of ${tupleSize} bytes; parent keys widened by new keys are not counted (a few percent for keys spread over the space)`,
    ],
  }
}

/**
 * Hash: XLOG_HASH_INSERT a row (24 + 20 + 8 for the metapage + 2 + 2 offset + the 16-byte tuple).
 * The index splits a bucket every `ffactor` rows (fillfactor of a page in 20-byte slots). A bucket
 * not yet split holds up to twice that, so a split moves about three quarters of `ffactor` tuples
 * into the new bucket, whose page is logged as an image (XLOG_HASH_SPLIT_PAGE); the old bucket's
 * overflow pages are then squeezed and its moved tuples deleted, about a quarter of a slot a row;
 * and four more small records (allocate, complete, cleanup) come with each split.
 */
export function predictHash(name: string, fillfactor: number, blockSize: number): MethodPrediction {
  const slot = HASH_TUPLE + LINE_POINTER
  const ffactor = Math.floor((blockSize * fillfactor) / 100 / slot)
  const insert = 24 + 20 + 8 + 2 + 2 + HASH_TUPLE
  const bytesPerRow = insert + slot / 4 + HASH_SPLIT.bytes / ffactor
  return {
    bytesPerRow,
    alignedPerRow: maxAlign(insert) + slot / 4 + (HASH_SPLIT.bytes + 4 * HASH_SPLIT.records) / ffactor,
    recordsPerRow: 1 + HASH_SPLIT.records / ffactor,
    tupleSize: HASH_TUPLE,
    splitsPerRow: 1 / ffactor,
    imageBytesPerRow: (3 / 4) * slot,
    assumptions: [
      `${name}: hash, a bucket split every ${ffactor} rows, its new page logged as an image; each tuple moved about once as the index grows`,
    ],
  }
}
