import type { Session } from '../driver/types.js'
import { TAIL_ROWS, tailStart } from './table-tail.js'

// A GiST insert widens the key of every parent whose key does not already cover the new one
// (gistdoinsert: gistgetadjusted on the way down), each an XLOG_GIST_PAGE_UPDATE of its own.
// Ranges spread over their space land in a leaf that already covers them; ranges that ascend
// with the rows (bookings, validity periods, time spans) all go to the rightmost leaf, and widen it
// and its parents whenever a range ends later than every range before it.

/** How a range column's values arrive, from the table's last rows in physical order. */
export interface RangeArrival {
  /** Rank correlation of the ranges' lower bounds with the rows' order; null without rows. */
  correlation: number | null
  /** Share of rows whose range is not within the bounds of a leaf's worth of rows before it. */
  leafGrowth: number
  /** The same over a subtree's worth of rows before it (a parent's key). */
  treeGrowth: number
}

/** Rows a leaf holds on average while the ranges ascend: between half and all of its capacity. */
export const ASCENDING_LEAF_SHARE = 0.75

/**
 * Reads a range key's arrival on the table's last rows (contiguous, in physical order): the rank
 * correlation of lower bounds with the order, and how often a range reaches past the bounds of the
 * `leafRows` (then `treeRows`) rows before it.
 */
export async function sampleRangeArrival(
  session: Session,
  table: { oid: string; quoted: string; estimatedRows: number },
  value: string,
  windows: { leafRows: number; treeRows: number },
): Promise<RangeArrival> {
  const leaf = Math.max(1, Math.round(windows.leafRows))
  const tree = Math.max(leaf, Math.round(windows.treeRows))
  const beyond = (rows: number) => {
    const frame = `over (order by ctid rows between ${rows} preceding and 1 preceding)`
    // An unbounded end (NULL) covers everything on its side.
    return `coalesce(upper(v) > max(upper(v)) ${frame} and not bool_or(upper_inf(v)) ${frame}, false)
            or coalesce(lower(v) < min(lower(v)) ${frame} and not bool_or(lower_inf(v)) ${frame}, false)`
  }
  // The value is the server's own index definition of the key; the frames are integers.
  const [row] = await session.query<{ correlation: number | null; leaf: number | null; tree: number | null }>(
    `select corr(position, bound_rank)::float8 as correlation,
            (avg(leaf::int) filter (where position > ${leaf}))::float8 as leaf,
            (avg(tree::int) filter (where position > ${tree}))::float8 as tree
       from (select row_number() over (order by ctid) as position, rank() over (order by lower(v)) as bound_rank,
                    ${beyond(leaf)} as leaf, ${beyond(tree)} as tree
               from (select ctid, ${value} as v from ${table.quoted} where ctid >= $1::tid) s
              where v is not null and not isempty(v)) r`,
    [await tailStart(session, table, Math.max(TAIL_ROWS, 2 * tree))],
  )
  // A table shorter than a window: the other window's share, or none.
  return {
    correlation: row?.correlation ?? null,
    leafGrowth: row?.leaf ?? row?.tree ?? 0,
    treeGrowth: row?.tree ?? row?.leaf ?? 0,
  }
}
