import { integer, percent, roundOne } from '../core/format.js'
import { predictPendingList } from './gin-pending-list.js'
import { type GinPostings, predictGinPostings } from './gin-postings.js'
import { maxAlign } from './layout.js'
import type { MethodPrediction } from './method-prediction.js'

// GIN's record model (gin/ginxlog.h): a row's entries to the pending list and its merges
// (gin-pending-list.ts), or straight into the tree (gin-postings.ts).

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
