import { LINE_POINTER } from '../core/units.js'
import { maxAlign } from './layout.js'
import type { MethodPrediction } from './method-prediction.js'

// The hash index's record model (hash/hash_xlog.h): the header (24), the first block reference (20: its header, RelFileLocator and block number),
// a further block of the same relation (8), a short main-data header (2).

/** A hash index tuple holds only the key's 32-bit hash code: an 8-byte header and 4 bytes, MAXALIGNed. */
const HASH_TUPLE = 16
/**
 * A bucket split's records besides the moved tuples: SPLIT_ALLOCATE_PAGE (~71 bytes), SPLIT_PAGE
 * without its image (~120), SPLIT_COMPLETE (~58), SPLIT_CLEANUP (~44), and the overflow page
 * added, squeezed and cleaned around it; about 8 records a split on random keys.
 */
const HASH_SPLIT = { bytes: 350, records: 8 }

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
