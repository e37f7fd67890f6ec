import { BTREE_SPECIAL, LINE_POINTER, PAGE_HEADER } from '../core/units.js'
import type { Column } from '../measure/catalog.js'
import { type ColumnLayout, indexTupleSize } from './layout.js'
import type { MethodPrediction } from './method-prediction.js'

// The B-tree's record model (nbtree/nbtxlog.h): INSERT_LEAF a row, and the splits its key order makes.

/** How new keys arrive in an index, which decides where its pages split. */
export const KEY_ORDERS = ['ascending', 'grouped-ascending', 'interleaved', 'random', 'duplicate-keys'] as const
export type KeyOrder = (typeof KEY_ORDERS)[number]

/**
 * Where new keys land, from pg_stats: a leading column filled from a sequence is ascending; few
 * distinct keys are deduplicated rather than split; a leading column that follows the physical
 * order (time) is ascending; a trailing one is
 * ascending within groups, which either span many pages (grouped) or share pages (interleaved);
 * anything else random.
 */
export function keyOrderFromStats(
  keys: Array<Column | undefined>,
  unique: boolean,
  tableRows: number,
  capacity: number,
): KeyOrder {
  const distinct = (column: Column | undefined) =>
    column?.distinct === null || column?.distinct === undefined
      ? tableRows
      : column.distinct < 0
        ? -column.distinct * tableRows
        : column.distinct
  const distinctKeys = Math.min(
    tableRows,
    keys.reduce((product, column) => product * Math.max(1, distinct(column)), 1),
  )
  const [leading] = keys
  // A sequence (identity, serial) hands out ascending values whatever the statistics say so far.
  if (leading?.sequenced) return 'ascending'
  if (!unique && tableRows > 0 && distinctKeys * 10 <= tableRows) return 'duplicate-keys'
  const trailing = keys.at(-1)
  if ((leading?.correlation ?? 0) >= 0.9) return 'ascending'
  // Splitting after the new item (nbtsplitloc.c) needs equal-sized tuples: fixed-width keys.
  if (keys.length > 1 && (trailing?.correlation ?? 0) >= 0.9 && keys.every((column) => (column?.length ?? -1) > 0)) {
    const pagesPerGroup = tableRows / Math.max(1, distinct(leading)) / capacity
    return pagesPerGroup >= 8 ? 'grouped-ascending' : 'interleaved'
  }
  return 'random'
}

/** How an index's leaf pages split as keys arrive: rows between splits and tuples moved right, in pages' worth. */
const SPLITS: Record<
  KeyOrder,
  { rowsPerSplit: (fill: number) => number; moved: (fill: number) => number; sibling: number } | null
> = {
  // Rightmost split: the left page keeps fillfactor, the new right page gets the rest.
  ascending: { rowsPerSplit: (fill) => fill, moved: (fill) => 1 - fill, sibling: 0 },
  // Split after the new item at the end of a group: the same, with a right sibling.
  'grouped-ascending': { rowsPerSplit: (fill) => fill, moved: (fill) => 1 - fill, sibling: 8 },
  // Groups sharing pages: measured on the field notes' (device_id, time) index.
  interleaved: { rowsPerSplit: () => 0.5, moved: () => 0.37, sibling: 8 },
  // Random keys: 50:50 splits, leaves ln 2 full on average.
  random: { rowsPerSplit: () => Math.LN2, moved: () => 0.5, sibling: 8 },
  // Deduplication merges equal keys into posting lists instead of splitting.
  'duplicate-keys': null,
}

export function leafCapacity(tupleSize: number, blockSize: number): number {
  const slot = tupleSize + LINE_POINTER
  return Math.floor((blockSize - PAGE_HEADER - BTREE_SPECIAL - slot) / slot)
}

/** What the B-tree model needs of an index: its key columns, how its keys arrive, its fillfactor. */
export interface BtreeIndex {
  name: string
  columns: ColumnLayout[]
  keyOrder: KeyOrder
  fillfactor: number
}

/**
 * A B-tree's leaf insert a row and its share of page splits, by key order: exact from the record
 * formats where keys ascend, estimated otherwise.
 */
export function predictBtree(index: BtreeIndex, blockSize: number): MethodPrediction {
  const tupleSize = indexTupleSize(index.columns)
  const capacity = leafCapacity(tupleSize, blockSize)
  const fill = index.fillfactor / 100
  const splits = SPLITS[index.keyOrder]
  const splitsPerRow = splits ? 1 / (splits.rowsPerSplit(fill) * capacity) : 0
  // INSERT_LEAF: 24 + 20 block ref + 2 + 2 offset + the tuple. A split record replaces it: 24 + block
  // refs + 2 + 10 xl_btree_split + the left high key + the tuples moved right and the new one.
  const leaf = 48 + tupleSize
  const split = splits ? 64 + splits.sibling + tupleSize + (splits.moved(fill) * capacity + 1) * tupleSize : 0
  const upper = 56 + tupleSize
  // Index tuples are MAXALIGNed, so these records are too.
  const bytesPerRow = leaf * (1 - splitsPerRow) + splitsPerRow * (split + upper)
  return {
    bytesPerRow,
    alignedPerRow: bytesPerRow,
    recordsPerRow: 1 + splitsPerRow,
    tupleSize,
    splitsPerRow,
    imageBytesPerRow: 0,
    assumptions:
      index.keyOrder === 'ascending'
        ? []
        : [`${index.name}: keys taken as ${index.keyOrder}, so its page splits are estimated`],
  }
}
