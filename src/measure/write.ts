import type { z } from 'zod'
import type { Database } from '../core/database.js'
import { counted, percent } from '../core/format.js'
import { batchOptionsSchema, measureShape, parseOptions, type WithDatabase } from '../core/options.js'
import type { Session } from '../driver/types.js'
import { readServer } from '../wal/server.js'
import { insertPosition, readStatWal, statWalDifference } from '../wal/snapshot.js'
import { resolveTable, type Table } from './catalog.js'
import { hotBlockers } from './hot.js'
import { onDatabase } from './lifecycle.js'
import { measureOnSession, timedCall } from './measure.js'
import { bytesPerChangedRow, type InsertCost } from './result.js'
import { exactlyOneWrite, type WriteSql, writeBatchShape, writeSql } from './write-batch.js'

// Updates, deletes and upserts through the same measurement as inserts: the batch is SQL (given, or
// written from `update`, `delete` or `upsert`), and the result explains what its updates cost: HOT or
// not, and for those that were not, whether an indexed column changed or the page had no room.

/**
 * Options of {@link measureWriteCost}: those of measureInsertCost, with a batch that may also be
 * `update`, `delete` or `upsert` (or `sql` with any mix of INSERT, UPDATE, DELETE, INSERT ... ON CONFLICT, MERGE).
 *
 * @example
 * const options: WriteOptions = { table: 'orders', update: { rows: 500, set: { status: "'shipped'" } } }
 */
export const writeOptionsSchema = batchOptionsSchema
  .extend({ ...measureShape(), ...writeBatchShape })
  .superRefine(exactlyOneWrite)

export type WriteOptions<Db extends Database | undefined = Database | undefined> = WithDatabase<
  z.input<typeof writeOptionsSchema>,
  Db
>
type ParsedWriteOptions = z.output<typeof writeOptionsSchema>

/** Why the updates that were not HOT were not, from the records and the catalog. */
export interface UpdateAnalysis {
  updated: number
  hotUpdated: number
  /** hotUpdated / updated. */
  hotShare: number
  /** Non-HOT updates whose new version stayed on the old page: an indexed column changed. */
  indexedColumnChanged: number
  /** Non-HOT updates whose new version went to another page: the old page had no room. */
  noRoom: number
  /** Columns the batch sets (from `update`, or read from the sql's SET lists). */
  setColumns: string[]
  /** Indexes with a key, included or predicate column the batch sets: each forces a non-HOT update. */
  forcingIndexes: string[]
  /** Summarising indexes (BRIN) on set columns: on PostgreSQL 16+ they do not prevent HOT. */
  summarisingIndexes: string[]
  /** Index records written per updated row, by index. */
  indexRecordsPerUpdate: Record<string, number>
  /** What happened, in one sentence. */
  explanation: string
}

/**
 * The cost deferred to VACUUM: what vacuuming the table writes after the batch committed, measured
 * on a clone of the database (PGlite) where the batch may commit without touching the original.
 */
export interface DeferredCost {
  /** WAL the VACUUM wrote (insert-LSN distance on the otherwise idle clone), and its records and images. */
  vacuumWalBytes: number
  vacuumRecords: number
  vacuumFpiCount: number
  /** vacuumWalBytes per row the batch updated or deleted: what each pays later. */
  bytesPerChangedRow: number
}

/** What a batch of any writes cost: a measurement, and for updates, HOT explained. */
export interface WriteCost extends Omit<InsertCost, 'kind'> {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'write-cost'
  /** WAL per row the batch inserted, updated or deleted. */
  bytesPerModifiedRow: number | null
  updates: UpdateAnalysis | null
  /** The VACUUM that updates and deletes leave for later; null where the database cannot be cloned (a real server) or nothing was updated or deleted. */
  deferred: DeferredCost | null
}

/** measureWriteCost without the notebook display; the exported entry point is in api.ts. */
export async function measureWriteCost(options: WriteOptions): Promise<WriteCost> {
  const began = performance.now()
  const parsed = parseOptions(writeOptionsSchema, options)
  return timedCall(began, await onDatabase(parsed, (session) => writeOnSession(session, parsed)))
}

async function writeOnSession(session: Session, options: ParsedWriteOptions): Promise<WriteCost> {
  const table = await resolveTable(session, options.table)
  const { update, delete: remove, upsert, ...batch } = options
  const written = writeSql(table, options)
  await setHintBits(session, table.quoted)
  const cost = await measureOnSession(session, { ...batch, sql: written?.sql })
  const changed = cost.writes.updated + cost.writes.deleted
  const deferred = written && changed > 0 ? await deferredVacuum(session, table, written.sql, changed) : null
  return asWriteCost(cost, table, written?.setColumns ?? [], deferred)
}

/**
 * A live table's rows have their hint bits set by earlier reads. Set them before the measurement:
 * with checksums or wal_log_hints the first read logs each page's image (FPI_FOR_HINT), which would
 * take the images the batch's own records log on a live table. One scan of the table.
 */
export async function setHintBits(session: Session, table: string): Promise<void> {
  await session.query(`select count(*) from ${table}`)
}

/** A measurement as a write's cost: WAL per modified row, and for updates, HOT explained. */
export function asWriteCost(
  cost: InsertCost,
  table: Table,
  setColumns: string[],
  deferred: DeferredCost | null,
): WriteCost {
  return {
    ...cost,
    kind: 'write-cost',
    bytesPerModifiedRow: bytesPerChangedRow(cost),
    deferred,
    updates: cost.writes.updated > 0 ? analyseUpdates(cost, table, setColumns) : null,
  }
}

/**
 * On a clone (PGlite), commits the batch and measures the VACUUM of the table that follows: the
 * dead tuples of updates and deletes, pruned and removed from every index. The clone is discarded.
 */
async function deferredVacuum(
  session: Session,
  table: Table,
  sql: WriteSql['sql'],
  changed: number,
): Promise<DeferredCost | null> {
  if (!session.clone) return null
  const copy = await session.clone()
  try {
    await copy.exec(typeof sql === 'function' ? sql(0, table.quoted) : sql)
    const server = await readServer(copy)
    const before = await readStatWal(copy, server)
    const start = await insertPosition(copy)
    await copy.exec(`vacuum ${table.quoted}`)
    const end = await insertPosition(copy)
    const stats = statWalDifference(before, await readStatWal(copy, server))
    const bytes = end.bytes - start.bytes
    return {
      vacuumWalBytes: bytes,
      vacuumRecords: stats.records,
      vacuumFpiCount: stats.fpi,
      bytesPerChangedRow: bytes / changed,
    }
  } finally {
    await copy.close()
  }
}

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

function analyseUpdates(cost: InsertCost, table: Table, setColumns: string[]): UpdateAnalysis {
  const { updated, hotUpdated } = cost.writes
  const nonHot = updated - hotUpdated
  const noRoom = cost.updatesToNewPage === null ? 0 : Math.min(nonHot, cost.updatesToNewPage)
  const { forcing, summarising } = hotBlockers(table, setColumns, cost.server.versionNum)
  const indexRecordsPerUpdate = Object.fromEntries(cost.indexes.map((index) => [index.name, index.records / updated]))
  // Called only for a batch that updated rows: updated > 0.
  const share = hotUpdated / updated
  const forcingNames = forcing.map((index) => index.name)
  const parts = [
    hotUpdated === 0
      ? `none of ${counted(updated, 'updated row')} was HOT`
      : `${counted(hotUpdated, 'update')} of ${counted(updated, 'row')} ${hotUpdated === 1 ? 'was' : 'were'} HOT (${percent(share)}): one heap record, no index entries`,
    ...(nonHot - noRoom > 0
      ? [
          `${counted(nonHot - noRoom, 'update')} stayed on ${nonHot - noRoom === 1 ? 'its' : 'their'} page but ${forcing.length > 0 ? `changed a column of ${forcingNames.join(', ')}` : 'changed an indexed column'}, so every index took a new entry`,
        ]
      : []),
    ...(noRoom > 0
      ? [
          `${counted(noRoom, 'update')} found no room on the old page (lower the table's fillfactor to leave some)${forcing.length > 0 ? `, and changed a column of ${forcingNames.join(', ')}, which alone prevents HOT` : ''}`,
        ]
      : []),
    ...(summarising.length > 0
      ? [
          `${summarising.map((index) => index.name).join(', ')} ${summarising.length === 1 ? 'is' : 'are'} summarising (BRIN) and did not prevent HOT`,
        ]
      : []),
  ]
  return {
    updated,
    hotUpdated,
    hotShare: share,
    indexedColumnChanged: nonHot - noRoom,
    noRoom,
    setColumns,
    forcingIndexes: forcingNames,
    summarisingIndexes: summarising.map((index) => index.name),
    indexRecordsPerUpdate,
    explanation: `${capitalised(parts.join('; '))}.`,
  }
}
