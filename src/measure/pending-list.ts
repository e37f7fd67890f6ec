import { counted, integer } from '../core/format.js'
import type { Session } from '../driver/types.js'
import { quoteIdent } from './catalog.js'
import type { IndexCost } from './result.js'

/** A GIN index's records that add rows to its pending list (fastupdate), and the one that empties it. */
const INTO_PENDING_LIST = new Set(['Gin/UPDATE_META_PAGE', 'Gin/INSERT_LISTPAGE'])
const PENDING_LIST_MERGED = 'Gin/DELETE_LISTPAGE'

/**
 * What a batch left out of a GIN index's cost: with fastupdate (the default), new entries go to a
 * pending list, which is merged into the index, writing its pages, only once it passes
 * gin_pending_list_limit (or at VACUUM). A batch that filled the list without merging it measured
 * the cheap half of a cost that steady ingest pays in full. Said with the rows a batch needs to
 * include a merge: the list's limit over the index's WAL a row (an upper bound of the entries' size,
 * so at least that many).
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
    const limitBytes = Number(limit?.bytes ?? 4 * 1_024 * 1_024)
    const bytesPerRow = (index.walBytes - index.fpiBytes) / Math.max(rows, 1)
    const rowsToMerge = bytesPerRow > 0 ? Math.ceil(limitBytes / bytesPerRow) : null
    notes.push(
      `${index.name} is a GIN index with fastupdate: the batch's ${counted(rows, 'row')} went to its pending list, which was not merged into the index within the batch (no Gin/DELETE_LISTPAGE). Steady ingest pays that merge once the list passes gin_pending_list_limit (${integer(limitBytes / 1_024)} kB here): its WAL is not in these bytes.${rowsToMerge === null ? '' : ` A batch of at least ${integer(rowsToMerge)} rows includes one (the limit over the ${integer(bytesPerRow)} bytes of WAL a row into the list).`}`,
    )
  }
  return notes
}
