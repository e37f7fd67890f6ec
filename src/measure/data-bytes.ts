import type { Session } from '../driver/types.js'
import { quoteIdent, type TableRelation } from './catalog.js'
import type { InsertCost } from './result.js'

/** Above this many pages (1 GiB of 8 kB pages) walcost scales from the new pages instead of scanning. */
const MAX_SCAN_PAGES = 131_072

export interface LogicalBytes {
  rows: number
  logicalBytes: number
  source: InsertCost['logicalBytesSource']
}

/**
 * Rows the batch inserted and the bytes of their column values, read inside the measuring
 * transaction after the window closed (reading can set hint bits, which writes WAL). Only the pages
 * from the table's end before the batch are read, unless the free space map put rows elsewhere.
 * `before` is the table's size and the transaction's insert counter just before the batch.
 */
export async function readLogicalBytes(
  session: Session,
  table: TableRelation,
  xids: readonly string[],
  before: { pages: number; inserted: number },
): Promise<LogicalBytes> {
  const [counter] = await session.query<{ inserted: string; pages: string }>(
    `select pg_stat_get_xact_tuples_inserted($1::oid)::text as inserted,
            (pg_relation_size($1::oid) / current_setting('block_size')::int8)::text as pages`,
    [table.oid],
  )
  const inserted = Number(counter?.inserted ?? 0) - before.inserted
  if (xids.length === 0 || inserted === 0) return { rows: inserted, logicalBytes: 0, source: 'new-pages' }
  const sizes = table.columns.map((column) => `coalesce(pg_column_size(t.${quoteIdent(column.name)}), 0)`).join(' + ')
  const sum = async (fromPage: number) => {
    const [row] = await session.query<{ rows: string; bytes: string }>(
      `select count(*)::text as rows, coalesce(sum(${sizes}), 0)::text as bytes
         from ${table.quoted} as t
        where t.ctid >= $1::tid and t.xmin::text = any ($2::text[])`,
      [`(${fromPage},0)`, [...xids]],
    )
    return { rows: Number(row?.rows ?? 0), bytes: Number(row?.bytes ?? 0) }
  }
  const fresh = await sum(Math.max(0, before.pages - 1))
  if (fresh.rows >= inserted) return { rows: inserted, logicalBytes: fresh.bytes, source: 'new-pages' }
  if (Number(counter?.pages ?? 0) <= MAX_SCAN_PAGES || fresh.rows === 0) {
    const all = await sum(0)
    return { rows: inserted, logicalBytes: all.bytes, source: 'table-scan' }
  }
  return { rows: inserted, logicalBytes: Math.round((fresh.bytes * inserted) / fresh.rows), source: 'new-pages-scaled' }
}
