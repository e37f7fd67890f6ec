import { counted, integer } from '../core/format.js'
import { BLOCK_SIZE, GIN_DEFAULT_PENDING_LIST_LIMIT, PAGE_HEADER } from '../core/units.js'
import type { Session } from '../driver/types.js'
import { quoteIdent } from './catalog.js'
import type { IndexCost } from './result.js'

/** A GIN index's records that add rows to its pending list (fastupdate), and the one that empties it. */
const INTO_PENDING_LIST = new Set(['Gin/UPDATE_META_PAGE', 'Gin/INSERT_LISTPAGE'])
const NEW_LIST_PAGE = 'Gin/INSERT_LISTPAGE'
const PENDING_LIST_MERGED = 'Gin/DELETE_LISTPAGE'

/**
 * A pending-list page's room for entries, as ginfast.c counts the list against its limit
 * (GIN_PAGE_FREESIZE: the page less its header and GIN's special space, 24 and 8 bytes).
 */
const LIST_PAGE_ROOM = BLOCK_SIZE - PAGE_HEADER - 8

/** Pages of a pending list that start its merge: ginfast.c merges once its pages x their room exceed the limit. */
export const pagesToMerge = (limitBytes: number) => Math.floor(limitBytes / LIST_PAGE_ROOM) + 1

/**
 * Room over the rows that fill the list once, in the batch a note suggests: a batch that starts
 * with the list empty (after a VACUUM) merges it only once the list passes its limit, and the rows
 * a page takes vary.
 */
const MERGE_MARGIN = 1.05

/** Up to two significant digits, rounding up: a batch size to type. */
function roundUp(rows: number): number {
  const step = 10 ** Math.max(0, Math.floor(Math.log10(rows)) - 1)
  return Math.ceil(rows / step) * step
}

/**
 * What a batch left out of a GIN index's cost: with fastupdate (the default), new entries go to a
 * pending list, which is merged into the index, writing its pages, only once the list's pages pass
 * gin_pending_list_limit (or at VACUUM). A batch that filled the list without merging it measured
 * the cheap half of a cost that steady ingest pays in full. Said with the rows a batch needs to
 * include a merge: the pages the limit allows over the new list pages the batch wrote a row (one
 * Gin/INSERT_LISTPAGE a page). A batch of that many rows includes one merge from any starting
 * fill of the list, as steady ingest pays one a that many rows.
 */
export async function pendingListNotes(
  session: Session,
  schema: string,
  indexes: IndexCost[],
  rows: number,
): Promise<string[]> {
  const unmerged = indexes.filter(
    (index) =>
      index.recordTypes.some((entry) => INTO_PENDING_LIST.has(entry.type)) &&
      !index.recordTypes.some((entry) => entry.type === PENDING_LIST_MERGED),
  )
  const notes: string[] = []
  for (const index of unmerged) {
    // The reloption is in kB; the setting reads with its unit ('4MB').
    const [limit] = await session.query<{ bytes: string }>(
      `select coalesce((select option_value::int8 * 1024 from pg_options_to_table(c.reloptions) where option_name = 'gin_pending_list_limit'),
                       pg_size_bytes(current_setting('gin_pending_list_limit')))::text as bytes
         from pg_class c where c.oid = to_regclass($1)`,
      [`${quoteIdent(schema)}.${quoteIdent(index.name)}`],
    )
    const limitBytes = Number(limit?.bytes ?? GIN_DEFAULT_PENDING_LIST_LIMIT)
    const pages = pagesToMerge(limitBytes)
    const newPages = index.recordTypes.find((entry) => entry.type === NEW_LIST_PAGE)?.records ?? 0
    const rowsToMerge = newPages > 0 && rows > 0 ? roundUp((MERGE_MARGIN * pages * rows) / newPages) : null
    notes.push(
      `${index.name} is a GIN index with fastupdate: the batch's ${counted(rows, 'row')} went to its pending list, which was not merged into the index within the batch (no Gin/DELETE_LISTPAGE). Steady ingest pays that merge once the list passes gin_pending_list_limit (${integer(limitBytes / 1_024)} kB here, ${counted(pages, 'page')}): its WAL and its time are not in this measurement.${rowsToMerge === null ? '' : ` A batch of at least ${integer(rowsToMerge)} rows includes one (the batch added ${counted(newPages, 'page')} to the list, ${integer(rows / newPages)} rows a page), as steady ingest pays it.`}`,
    )
  }
  return notes
}
