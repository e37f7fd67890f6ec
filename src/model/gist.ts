import { integer, percent, roundOne } from '../core/format.js'
import { LINE_POINTER, PAGE_HEADER } from '../core/units.js'
import type { RangeArrival } from './gist-ranges.js'
import { maxAlign } from './layout.js'
import type { MethodPrediction } from './method-prediction.js'

// GiST's record model (gist/gistxlog.h): the header (24), the first block reference (20: its header, RelFileLocator and block number),
// a further block of the same relation (8), a short main-data header (2).

/** GISTPageOpaqueData at the end of a GiST page. */
const GIST_SPECIAL = 16

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
