import { fromServerError } from '../core/errors.js'
import { rolledBack } from '../driver/rolled-back.js'
import type { Session } from '../driver/types.js'
import type { WindowAttribution } from './attribution.js'
import { TEMPORARY_WALINSPECT_SCHEMA } from './server.js'
import type { WalPosition } from './snapshot.js'

interface GroupRow extends Record<string, unknown> {
  ours: boolean
  relfilenode: string | null
  type: string | null
  records: string
  bytes: string
  fpi_bytes: string
  fpi_count: string
  aligned_bytes: string
  checkpoints: string
}

// Aggregated on the server: a batch of a million rows is millions of WAL records, and only a few
// rows a relation come back. block_ref (15+) starts with "blkref #N: rel spc/db/relfilenode ..."
// (after a space where the first block's id is not 0), and each image adds "FPW"; images count
// towards that first relation. Records are MAXALIGNed (8) in WAL. split_part and length arithmetic
// rather than regular expressions, and xids compared as xids once a record: over 400,000 records
// that takes a fifth of the time.
const attributionSql = (schema: string) => `
  select ours,
         case when ours then split_part(split_part(ltrim(coalesce(block_ref, '')), ' ', 4), '/', 3) end as relfilenode,
         case when ours then resource_manager || '/' || record_type end as type,
         count(*)::text as records,
         coalesce(sum(record_length), 0)::text as bytes,
         coalesce(sum(fpi_length), 0)::text as fpi_bytes,
         coalesce(sum((length(coalesce(block_ref, '')) - length(replace(coalesce(block_ref, ''), 'FPW', ''))) / 3), 0)::text as fpi_count,
         coalesce(sum((record_length + 7) / 8 * 8), 0)::text as aligned_bytes,
         count(*) filter (where resource_manager = 'XLOG' and record_type in ('CHECKPOINT_REDO', 'CHECKPOINT_ONLINE'))::text as checkpoints
    from (select *, xid = any ($3::xid[]) as ours from ${schema}.pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)) as record
   group by 1, 2, 3`

/**
 * Splits the WAL between two positions into our transaction's records, by relation, and everything
 * else. `xids` are our transaction's ids: the top-level one and those of its open subtransactions.
 */
export async function attributeWithWalinspect(
  session: Session,
  walinspect: { schema: string; temporary: boolean },
  start: WalPosition,
  end: WalPosition,
  xids: readonly string[],
  inTransaction: boolean,
): Promise<WindowAttribution> {
  const read = () => session.query<GroupRow>(attributionSql(walinspect.schema), [start.lsn, end.lsn, [...xids]])
  let rows: GroupRow[]
  try {
    rows = walinspect.temporary ? await withTemporaryWalinspect(session, inTransaction, read) : await read()
  } catch (error) {
    throw fromServerError(error, 'reading WAL with pg_walinspect')
  }
  const attribution: WindowAttribution = {
    ours: new Map(),
    alignedBytes: 0,
    oursAlignedBytes: 0,
    checkpointRecords: 0,
    byType: null,
    othersByRelation: null,
    committedOthers: null,
    updatesToNewPage: null,
    insertedRows: null,
  }
  for (const row of rows) {
    const aligned = Number(row.aligned_bytes)
    attribution.alignedBytes += aligned
    attribution.checkpointRecords += Number(row.checkpoints)
    if (!row.ours) continue
    attribution.oursAlignedBytes += aligned
    const relation = row.relfilenode ?? ''
    const types = attribution.ours.get(relation) ?? []
    types.push({
      type: row.type ?? '',
      records: Number(row.records),
      bytes: Number(row.bytes),
      fpiBytes: Number(row.fpi_bytes),
      fpiCount: Number(row.fpi_count),
    })
    attribution.ours.set(relation, types)
  }
  return attribution
}

/**
 * pg_walinspect created for one query inside a transaction that is rolled back (or, inside the
 * caller's transaction, a savepoint rolled back to): nothing persists.
 */
function withTemporaryWalinspect<T>(session: Session, inTransaction: boolean, read: () => Promise<T>): Promise<T> {
  return rolledBack(session, inTransaction ? 'savepoint' : 'transaction', async () => {
    await session.exec(
      `create schema ${TEMPORARY_WALINSPECT_SCHEMA}; create extension pg_walinspect schema ${TEMPORARY_WALINSPECT_SCHEMA}`,
    )
    return read()
  })
}
