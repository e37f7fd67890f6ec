import { z } from 'zod'
import { DEFAULT_PICK } from '../defaults.js'
import type { Session } from '../driver/types.js'
import { counted, percent } from '../format.js'
import { batchOptionsSchema, measureShape, parseOptions } from '../options.js'
import { readServer } from '../wal/server.js'
import { insertPosition, readStatWal, statWalDifference } from '../wal/snapshot.js'
import { type Index, quoteIdent, resolveTable, type Table } from './catalog.js'
import { onDatabase } from './lifecycle.js'
import { measureOnSession } from './measure.js'
import type { InsertCost } from './result.js'

// Updates and deletes through the same measurement as inserts: the batch is SQL (given, or written
// here from `update` or `delete`), and the result explains what its updates cost: HOT or not, and
// for those that were not, whether an indexed column changed or the page had no room.

const pickSchema = z
  .enum(['newest', 'oldest', 'random'])
  .default(DEFAULT_PICK)
  .describe("Which rows: the newest (the table's last pages), the oldest, or random ones (by seed).")

const rowsSchema = z.number().int().min(1).max(10_000_000).describe('How many rows.')

/**
 * Options of {@link measureWriteCost}: those of measureInsertCost, with a batch that may also be
 * `update` or `delete` (or `sql` with any mix of INSERT, UPDATE, DELETE, INSERT ... ON CONFLICT, MERGE).
 *
 * @example
 * const options: WriteOptions = { table: 'orders', update: { rows: 500, set: { status: "'shipped'" } } }
 */
export const writeOptionsSchema = batchOptionsSchema
  .extend({
    ...measureShape(),
    update: z
      .object({
        rows: rowsSchema,
        set: z
          .record(z.string().min(1), z.string().min(1))
          .refine((set) => Object.keys(set).length > 0, 'name at least one column')
          .describe(
            "Columns and the SQL expressions they are set to, e.g. { status: \"'shipped'\", total: 'total + 1' }.",
          ),
        pick: pickSchema,
      })
      .optional()
      .describe('The batch as an UPDATE of existing rows.'),
    delete: z
      .object({ rows: rowsSchema, pick: pickSchema })
      .optional()
      .describe('The batch as a DELETE of existing rows.'),
  })
  .superRefine((options, context) => {
    const given = (['sql', 'rows', 'count', 'update', 'delete'] as const).filter((name) => options[name] !== undefined)
    if (given.length !== 1) {
      context.addIssue({
        code: 'custom',
        path: [given[1] ?? 'sql'],
        message: 'give the batch as exactly one of sql, rows, count, update or delete',
      })
    }
  })

export type WriteOptions = z.input<typeof writeOptionsSchema>
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
  const parsed = parseOptions(writeOptionsSchema, options)
  return onDatabase(parsed, (session) => writeOnSession(session, parsed))
}

async function writeOnSession(session: Session, options: ParsedWriteOptions): Promise<WriteCost> {
  const table = await resolveTable(session, options.table)
  const { update, delete: remove, ...batch } = options
  const sql = update ? updateSql(table, update) : remove ? deleteSql(table, remove) : batch.sql
  // A live table's rows have their hint bits set by earlier reads. Set them now, outside the window:
  // with checksums or wal_log_hints the first read logs each page's image (FPI_FOR_HINT, under no
  // transaction), which would take the images the batch's own records log on a live table.
  await session.query(`select count(*) from ${table.quoted}`)
  const cost = await measureOnSession(session, { ...batch, sql })
  const { inserted, updated, deleted } = cost.writes
  const modified = inserted + updated + deleted
  const server = await readServer(session)
  const changed = updated + deleted
  return {
    ...cost,
    kind: 'write-cost',
    bytesPerModifiedRow: modified > 0 ? cost.walBytes / modified : null,
    deferred: changed > 0 && typeof sql !== 'undefined' ? await deferredVacuum(session, table, sql, changed) : null,
    updates:
      updated > 0
        ? analyseUpdates(
            cost,
            table,
            setColumnsOf(update?.set, typeof sql === 'string' ? sql : undefined),
            server.facts.versionNum,
          )
        : null,
  }
}

/**
 * On a clone (PGlite), commits the batch and measures the VACUUM of the table that follows: the
 * dead tuples of updates and deletes, pruned and removed from every index. The clone is discarded.
 */
async function deferredVacuum(
  session: Session,
  table: Table,
  sql: string | ((run: number, table: string) => string),
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

/** The rows a pick chooses, as a subquery of ctids: deterministic for the same table state and seed. */
function pickedRows(table: Table, rows: number, pick: 'newest' | 'oldest' | 'random', seed: number): string {
  const order = pick === 'newest' ? 'ctid desc' : pick === 'oldest' ? 'ctid' : `hashtext(ctid::text || '${seed}')`
  return `select ctid from ${table.quoted} order by ${order} limit ${rows}`
}

function updateSql(
  table: Table,
  update: NonNullable<ParsedWriteOptions['update']>,
): (run: number, target: string) => string {
  const set = Object.entries(update.set)
    .map(([column, expression]) => `${quoteIdent(column)} = ${expression}`)
    .join(', ')
  return (run, target) =>
    `update ${target} set ${set} where ctid = any (array(${pickedRows({ ...table, quoted: target }, update.rows, update.pick, run + 1)}))`
}

function deleteSql(
  table: Table,
  remove: NonNullable<ParsedWriteOptions['delete']>,
): (run: number, target: string) => string {
  return (run, target) =>
    `delete from ${target} where ctid = any (array(${pickedRows({ ...table, quoted: target }, remove.rows, remove.pick, run + 1)}))`
}

/**
 * The columns the batch sets: `update.set`'s, or those of each `UPDATE ... SET a = ..., b = ...` in
 * the sql (a simple reading: column names before '=' at the top level of each SET list).
 */
function setColumnsOf(set: Record<string, string> | undefined, sql: string | undefined): string[] {
  if (set) return Object.keys(set)
  const columns = new Set<string>()
  for (const match of (sql ?? '').matchAll(/\bset\s+([\s\S]*?)(?:\bwhere\b|\bfrom\b|\breturning\b|;|$)/gi)) {
    for (const assignment of splitTopLevel(match[1] ?? '')) {
      const name = /^\s*("(?:[^"]|"")+"|[a-z_][a-z0-9_$]*)\s*=/i.exec(assignment)?.[1]
      if (name) columns.add(name.startsWith('"') ? name.slice(1, -1).replaceAll('""', '"') : name.toLowerCase())
    }
  }
  return [...columns]
}

/** Splits on commas outside parentheses and quotes. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = []
  let depth = 0
  let quote: string | null = null
  let current = ''
  for (const char of text) {
    if (quote) quote = char === quote ? null : quote
    else if (char === "'" || char === '"') quote = char
    else if (char === '(') depth += 1
    else if (char === ')') depth -= 1
    else if (char === ',' && depth === 0) {
      parts.push(current)
      current = ''
      continue
    }
    current += char
  }
  return [...parts, current]
}

/**
 * Indexes on columns the update sets: by key or included column, or, for an expression or a
 * predicate, by the column's name in the index's definition.
 */
function indexesOn(table: Table, columns: string[]): Index[] {
  const attnums = new Set(
    table.columns.filter((column) => columns.includes(column.name)).map((column) => column.attnum),
  )
  const escaped = columns.map((column) => column.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  const named = new RegExp(`\\b(${escaped.join('|')})\\b`)
  return table.indexes.filter(
    (index) =>
      index.columns.some((attnum) => attnums.has(attnum)) ||
      ((index.columns.includes(0) || /\bwhere\b/i.test(index.definition)) &&
        columns.length > 0 &&
        named.test(index.definition)),
  )
}

const capitalised = (text: string) => text.charAt(0).toUpperCase() + text.slice(1)

function analyseUpdates(cost: InsertCost, table: Table, setColumns: string[], versionNum: number): UpdateAnalysis {
  const { updated, hotUpdated } = cost.writes
  const nonHot = updated - hotUpdated
  const noRoom = cost.updatesToNewPage === null ? 0 : Math.min(nonHot, cost.updatesToNewPage)
  const touched = indexesOn(table, setColumns)
  // PostgreSQL 16 lets summarising indexes (BRIN) be updated without giving up HOT.
  const summarising = versionNum >= 160_000 ? touched.filter((index) => index.method === 'brin') : []
  const forcing = touched.filter((index) => !summarising.includes(index))
  const indexRecordsPerUpdate = Object.fromEntries(cost.indexes.map((index) => [index.name, index.records / updated]))
  const share = updated > 0 ? hotUpdated / updated : 0
  const parts = [
    hotUpdated === 0
      ? `none of ${counted(updated, 'updated row')} was HOT`
      : `${counted(hotUpdated, 'update')} of ${counted(updated, 'row')} ${hotUpdated === 1 ? 'was' : 'were'} HOT (${percent(share)}): one heap record, no index entries`,
    ...(nonHot - noRoom > 0
      ? [
          `${counted(nonHot - noRoom, 'update')} stayed on ${nonHot - noRoom === 1 ? 'its' : 'their'} page but ${forcing.length > 0 ? `changed a column of ${forcing.map((index) => index.name).join(', ')}` : 'changed an indexed column'}, so every index took a new entry`,
        ]
      : []),
    ...(noRoom > 0
      ? [
          `${counted(noRoom, 'update')} found no room on the old page (lower the table's fillfactor to leave some)${forcing.length > 0 ? `, and changed a column of ${forcing.map((index) => index.name).join(', ')}, which alone prevents HOT` : ''}`,
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
    forcingIndexes: forcing.map((index) => index.name),
    summarisingIndexes: summarising.map((index) => index.name),
    indexRecordsPerUpdate,
    explanation: `${capitalised(parts.join('; '))}.`,
  }
}
