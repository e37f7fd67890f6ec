import type { Session } from '../driver/types.js'

// New rows go to the end of a heap, and their neighbours in an index that follows the rows' order
// are the rows just before them: the table's last pages, read as they lie (a TID range scan, PG14+),
// show what a row arriving next meets.

/** Rows of the table's end that are read. */
export const TAIL_ROWS = 5_000

/**
 * The first TID of the table's last pages holding about `rows` rows (from its size and estimated
 * rows; the whole table when it has no estimate), as text for `ctid >= $n::tid`.
 */
export async function tailStart(
  session: Session,
  table: { oid: string; estimatedRows: number },
  rows = TAIL_ROWS,
): Promise<string> {
  const [start] = await session.query<{ start: string }>(
    `select format('(%s,0)', greatest(0, pages - ceil($2::float8 * pages / greatest($3::float8, 1))::int8)) as start
       from (select pg_relation_size($1::oid) / current_setting('block_size')::int8 as pages) s`,
    [table.oid, rows, table.estimatedRows],
  )
  return start?.start ?? '(0,0)'
}
