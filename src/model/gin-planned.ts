import type { GinPostings } from './gin-postings.js'
import { maxAlign } from './layout.js'

// A planned GIN index has no table to sample: its keys, as the description gives them kind by
// kind, stand for what a sample of the table's last rows would count (gin-postings.ts).

/** One kind of key of a planned GIN index, as the description gives it. */
export interface PlannedGinKeys {
  /** Entries of this kind a row. */
  perRow: number
  /** Distinct keys of this kind in the table, or 'each row' for a value new in every row. */
  distinct: number | 'each row'
  /** A key's bytes in its entry tuple. */
  keyBytes: number
}

/** Rows the planned keys are spread over, as a sample's window would be. */
const PLANNED_WINDOW = 10_000

/** An entry tuple's bytes before its posting list: an 8-byte header and the key, MAXALIGNed. */
export const plannedEntryTuple = (keys: PlannedGinKeys) => maxAlign(8 + keys.keyBytes)

/**
 * The posting lists a sample would read on a table of `tableRows` rows, `heapRowsPerPage` a page,
 * whose rows hold these keys: a key shared by the table's rows is in `perRow / distinct` of them,
 * evenly, before and after; a key new in each row is in its row alone.
 */
export function plannedGinPostings(keys: PlannedGinKeys[], tableRows: number, heapRowsPerPage: number): GinPostings {
  return {
    windowRows: PLANNED_WINDOW,
    windowPages: PLANNED_WINDOW / heapRowsPerPage,
    spreadRows: PLANNED_WINDOW,
    tableRows,
    groups: keys.map((kind) => {
      const tupleBytes = plannedEntryTuple(kind)
      if (kind.distinct === 'each row')
        return { occurrences: 1, spread: 0, keys: kind.perRow * PLANNED_WINDOW, tupleBytes, deltaBytes: null }
      const occurrences = (kind.perRow * PLANNED_WINDOW) / kind.distinct
      return { occurrences, spread: occurrences, keys: kind.distinct, tupleBytes, deltaBytes: null }
    }),
  }
}
