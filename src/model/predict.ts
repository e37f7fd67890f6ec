import { z } from 'zod'
import { DEFAULT_KEY_ORDER, DEFAULT_METHOD, DEFAULT_PLANNED_ROWS, DEFAULT_PLANNED_TABLE } from '../core/defaults.js'
import { WalcostError } from '../core/errors.js'
import { integer, percent, roundOne } from '../core/format.js'
import { batchOptionsSchema, connectionOptionsSchema, parseOptions } from '../core/options.js'
import {
  BLOCK_SIZE,
  BTREE_DEFAULT_FILLFACTOR,
  BTREE_SPECIAL,
  DEFAULT_WAL_LEVEL,
  DEFAULT_WORK_MEM,
  GIN_DEFAULT_PENDING_LIST_LIMIT,
  HASH_DEFAULT_FILLFACTOR,
  HEAP_DEFAULT_FILLFACTOR,
  LINE_POINTER,
  PAGE_HEADER,
  XLOG_SHORT_PAGE_HEADER,
} from '../core/units.js'
import type { Session } from '../driver/types.js'
import { type Column, quoteIdent, resolveTable, samplePercent, type Table } from '../measure/catalog.js'
import { onDatabase } from '../measure/lifecycle.js'
import type { InsertCost } from '../measure/result.js'
import { readServer } from '../wal/server.js'
import { type GinColumn, ginEntriesSql, ginPlaceholderBytes } from './gin-entries.js'
import { plannedEntryTuple, plannedGinPostings } from './gin-planned.js'
import { sampleGinPostings } from './gin-postings.js'
import { ASCENDING_LEAF_SHARE, type RangeArrival, sampleRangeArrival } from './gist-ranges.js'
import {
  type GinShape,
  type GistShape,
  gistCapacity,
  type MethodPrediction,
  predictGin,
  predictGist,
  predictHash,
} from './index-methods.js'
import {
  type ColumnLayout,
  type HeapTupleSizes,
  heapTupleSizes,
  indexTupleSize,
  logicalRowBytes,
  maxAlign,
  shortAlign,
} from './layout.js'
import { typeLayout } from './types.js'

const keyOrderSchema = z.enum(['ascending', 'grouped-ascending', 'interleaved', 'random', 'duplicate-keys'])
type KeyOrder = z.infer<typeof keyOrderSchema>

const plannedColumnSchema = z.strictObject({
  name: z.string().min(1),
  type: z.string().min(1).describe('SQL type name: bigint, text, numeric(12,2), timestamptz, uuid, ...'),
  nullable: z.boolean().default(false),
  nullFraction: z.number().min(0).max(1).optional().describe('share of NULLs (default 0, or 0.1 when nullable)'),
  avgWidth: z
    .number()
    .positive()
    .optional()
    .describe('average stored width of a value, header included (varlena types)'),
  identity: z.boolean().default(false).describe('filled from a sequence (identity; serial types count by themselves)'),
})

const plannedGinKeysSchema = z.strictObject({
  perRow: z
    .number()
    .positive()
    .describe("entries of this kind a row: a jsonb document's keys or its values, an array's elements"),
  distinct: z
    .union([z.number().int().positive(), z.literal('each row')])
    .describe(
      "distinct keys of this kind in the table, or 'each row' for a value new in every row (an id, a reference)",
    ),
  keyBytes: z
    .number()
    .positive()
    .default(8)
    .describe(
      "a key's bytes: for jsonb_ops a key's or string value's text and 2 (10 past 125 bytes), for jsonb_path_ops 4, for an array its element's width",
    ),
})

const PLANNED_METHODS = ['btree', 'hash', 'gist', 'gin', 'brin'] as const

const plannedIndexSchema = z
  .strictObject({
    name: z.string().min(1),
    method: z.enum(PLANNED_METHODS).default('btree').describe('the access method: btree, hash, gist, gin or brin'),
    columns: z.array(z.string().min(1)).min(1),
    include: z.array(z.string().min(1)).default([]),
    keyOrder: keyOrderSchema
      .optional()
      .describe(
        'B-tree: how new keys arrive: ascending (time, a sequence), grouped-ascending (few groups, ascending within each), interleaved (many small groups), random (uuid), or duplicate-keys (few distinct keys: deduplication instead of splits); default ascending when the leading column is an identity or serial column, else random',
      ),
    fillfactor: z
      .number()
      .int()
      .min(10)
      .max(100)
      .optional()
      .describe(
        `B-tree and hash: default ${BTREE_DEFAULT_FILLFACTOR} for a B-tree, ${HASH_DEFAULT_FILLFACTOR} for hash`,
      ),
    keys: z
      .array(plannedGinKeysSchema)
      .min(1)
      .optional()
      .describe("GIN: its entries, kind by kind (a GIN index's WAL depends on how many rows share each key)"),
    fastupdate: z
      .boolean()
      .default(true)
      .describe('GIN: a pending list (the default), or entries straight into the tree'),
    pendingListLimit: z
      .number()
      .int()
      .min(64)
      .default(GIN_DEFAULT_PENDING_LIST_LIMIT / 1024)
      .describe('GIN: gin_pending_list_limit in kB'),
  })
  .superRefine((index, context) => {
    if (index.method === 'gin' && !index.keys)
      context.addIssue({
        code: 'custom',
        path: ['keys'],
        message: `${index.name} is a GIN index: give its keys, e.g. keys: [{ perRow: 5, distinct: 5, keyBytes: 8 }, { perRow: 1, distinct: 'each row', keyBytes: 34 }] for a document's 5 keys and an id of its own`,
      })
    if (index.method !== 'gin' && index.keys)
      context.addIssue({ code: 'custom', path: ['keys'], message: 'keys are for a GIN index (method: gin)' })
    for (const [k, kind] of (index.keys ?? []).entries()) {
      if (kind.distinct !== 'each row' && kind.perRow > kind.distinct)
        context.addIssue({
          code: 'custom',
          path: ['keys', k, 'perRow'],
          message: `a row holds a key once: perRow ${kind.perRow} is more than its ${kind.distinct} distinct keys`,
        })
    }
  })

/** A table that does not exist yet: its columns and indexes. */
export const tableDescriptionSchema = z.strictObject({
  name: z.string().default(DEFAULT_PLANNED_TABLE),
  columns: z.array(plannedColumnSchema).min(1),
  indexes: z.array(plannedIndexSchema).default([]),
  fillfactor: z.number().int().min(10).max(100).default(HEAP_DEFAULT_FILLFACTOR),
  walLevel: z.enum(['minimal', 'replica', 'logical']).default(DEFAULT_WAL_LEVEL),
  rows: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_PLANNED_ROWS)
    .describe("rows in the table when these are added: a GIN key's posting list holds the rows that share it"),
  unlogged: z.boolean().default(false).describe('an UNLOGGED table: its rows and indexes write no WAL'),
})

/**
 * Options of {@link predictInsertCost}: a table on a database (read from the catalog, nothing is
 * written), or a description of a table that does not exist yet.
 *
 * @example
 * const options: PredictOptions = { description: { columns: [{ name: 'id', type: 'bigint' }], indexes: [{ name: 'pk', columns: ['id'], keyOrder: 'ascending' }] } }
 */
export const predictOptionsSchema = connectionOptionsSchema
  .extend({
    setup: batchOptionsSchema.shape.setup,
    table: z.string().trim().min(1).optional().describe("the table to predict for, as '...'::regclass reads it"),
    description: tableDescriptionSchema.optional(),
    method: z
      .enum(['insert', 'multirow', 'copy'])
      .default(DEFAULT_METHOD)
      .describe('how rows are sent: one INSERT per row, multi-row INSERTs, or COPY'),
    rowsPerCommit: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('rows per transaction, for the commit records (default: one large transaction)'),
  })
  .superRefine((options, context) => {
    if ((options.table === undefined) === (options.description === undefined)) {
      context.addIssue({
        code: 'custom',
        path: ['table'],
        message: 'give either a table to read from the database, or a description of a planned table',
      })
    }
  })

export type PredictOptions = z.input<typeof predictOptionsSchema>
export type TableDescription = z.input<typeof tableDescriptionSchema>

interface IndexModel {
  name: string
  method: string
  columns: ColumnLayout[]
  keyOrder: KeyOrder
  fillfactor: number
  /** Share of rows the index takes: a partial index's predicate's selectivity on a sample, 0 for BRIN, else 1. */
  share: number
  gin?: GinShape
  gist?: GistShape
  /** Where the model guessed for this index. */
  assumptions: string[]
}

/** Access methods with a record model of their own; any other is estimated as a B-tree of the same keys. */
const MODELLED_METHODS = new Set(['btree', 'gin', 'gist', 'hash', 'brin'])

/** What the prediction is computed from, whether it came from a catalog or a description. */
interface TableModel {
  table: string
  columns: ColumnLayout[]
  indexes: IndexModel[]
  fillfactor: number
  walLevel: string
  blockSize: number
  /** Columns filled from a sequence (serial, identity): each logs a record every 33 values. */
  sequences: number
  unlogged: boolean
  temporary: boolean
  /** A default calls a volatile function (other than nextval): COPY inserts row by row. */
  volatileDefault: boolean
  /** Values stored out of line (TOAST) a row, and their stored bytes a row, from a sample. */
  toast: { valuesPerRow: number; bytesPerRow: number }
  assumptions: string[]
}

export interface IndexPrediction {
  name: string
  /** Record bytes per row (leaf inserts and their share of splits), images excluded. */
  bytesPerRow: number
  /** Page images the index logs by design, whatever the checkpoints (a hash bucket split's new page, both halves of a GIN split), bytes per row. */
  imageBytesPerRow: number
  recordsPerRow: number
  /** Size of one index tuple on a leaf page. */
  tupleSize: number
  splitsPerRow: number
  /** How new keys arrive, for a B-tree (and methods estimated as one); null for GIN, GiST, hash and BRIN. */
  keyOrder: KeyOrder | null
  /** true for B-tree, whose records are modelled exactly; GIN, GiST and hash have record models with stated assumptions. */
  exact: boolean
  /** Share of rows the index takes (a partial index's predicate on a sample of the table; 0 for BRIN, which writes on summarising; else 1). */
  share: number
  /** Where the model guessed for this index; also in the prediction's assumptions. */
  assumptions: string[]
}

/** A predicted InsertCost, per row, in the measured result's shape (no images: steady state). */
export interface InsertCostPrediction {
  /** Which result this is: every result carries its kind, for renderers and JSON readers. */
  kind: 'prediction'
  table: string
  method: 'insert' | 'multirow' | 'copy'
  rowsPerCommit: number | null
  /** WAL per row including record alignment and WAL page headers, as a measurement's bytesPerRow. */
  bytesPerRow: number
  recordsPerRow: number
  logicalBytesPerRow: number
  amplification: number
  tuple: { tupleLength: number; onPage: number }
  /** Per row: heap and index record bytes, the images an index logs by design (hash and GIN splits), the rest (alignment, page headers, commits). */
  breakdown: { heapBytes: number; indexBytes: number; fpiBytes: number; otherBytes: number }
  heap: { bytesPerRow: number; recordsPerRow: number }
  indexes: IndexPrediction[]
  /** Where the model guessed: missing statistics, key order, other access methods. */
  assumptions: string[]
}

// COPY buffers this many tuples (or bytes of them) before heap_multi_insert (copyfrom.c).
const COPY_BUFFERED_TUPLES = 1000
const COPY_BUFFERED_BYTES = 65_535
const MAX_HEAP_TUPLES_PER_PAGE = 291

/** predictInsertCost without the notebook display; the exported entry point is in api.ts. */
export async function predictInsertCost(options: PredictOptions): Promise<InsertCostPrediction> {
  const parsed = parseOptions(predictOptionsSchema, options)
  const model = parsed.description
    ? modelFromDescription(parsed.description)
    : await onDatabase(parsed, (session) => modelFromCatalog(session, parsed.table as string), { readsWal: false })
  return predict(model, parsed.method, parsed.rowsPerCommit ?? null)
}

function modelFromDescription(description: z.output<typeof tableDescriptionSchema>): TableModel {
  const assumptions: string[] = []
  const columns = description.columns.map((column): ColumnLayout => {
    const layout = typeLayout(column.type)
    if (!layout) {
      throw new WalcostError(
        'INVALID_OPTIONS',
        `description.columns: unknown type ${column.type} for ${column.name}; use a built-in type name, or give a similar one with its avgWidth.`,
        { field: 'description.columns' },
      )
    }
    if (layout.length < 0 && column.avgWidth === undefined)
      assumptions.push(`${column.name} (${column.type}): assumed ${layout.width} bytes a value; give avgWidth`)
    return {
      name: column.name,
      length: layout.length,
      align: layout.align,
      avgWidth: column.avgWidth ?? layout.width,
      nullFraction: column.nullFraction ?? (column.nullable ? 0.1 : 0),
    }
  })
  const byName = new Map(columns.map((column) => [column.name, column]))
  const typeOf = new Map(description.columns.map((column) => [column.name, column.type.trim().toLowerCase()]))
  const sequenced = new Set(
    description.columns
      .filter((column) => /serial$/i.test(column.type.trim()) || column.identity)
      .map((column) => column.name),
  )
  const heap = heapTupleSizes(columns)
  const heapRowsPerPage = Math.max(
    1,
    Math.floor(((BLOCK_SIZE - PAGE_HEADER) * description.fillfactor) / 100 / (heap.onPage + LINE_POINTER)),
  )
  const indexes = description.indexes.map((index): IndexModel => {
    const indexColumns = [...index.columns, ...index.include].map((name) => {
      const column = byName.get(name)
      if (!column)
        throw new WalcostError(
          'INVALID_OPTIONS',
          `description.indexes: ${index.name} names ${name}, which is not a column.`,
          { field: 'description.indexes' },
        )
      // A GiST leaf stores its operator class's key type: a point as a box.
      const stored = index.method === 'gist' ? GIST_STORED_TYPES[typeOf.get(name) ?? ''] : undefined
      const layout = stored ? typeLayout(stored) : undefined
      return layout ? { ...column, length: layout.length, align: layout.align, avgWidth: layout.width } : column
    })
    const own: string[] = []
    if (index.method === 'brin') own.push(brinAssumption(index.name))
    const gin =
      index.method === 'gin' && index.keys
        ? {
            entriesPerRow: index.keys.reduce((sum, kind) => sum + kind.perRow, 0),
            entryBytesPerRow: index.keys.reduce((sum, kind) => sum + kind.perRow * plannedEntryTuple(kind), 0),
            fastupdate: index.fastupdate,
            pendingLimitBytes: index.pendingListLimit * 1024,
            mergeMemoryBytes: DEFAULT_WORK_MEM,
            unsampled: [],
            postings: plannedGinPostings(index.keys, description.rows, heapRowsPerPage),
          }
        : undefined
    if (gin)
      own.push(
        `${index.name}: GIN from its keys as described, for a table of ${integer(description.rows)} rows (work_mem taken as PostgreSQL's default, ${integer(DEFAULT_WORK_MEM / 1024)} kB)`,
      )
    return {
      name: index.name,
      method: index.method,
      // A sequence hands out ascending values: an index it leads takes each new key at its right end.
      keyOrder: index.keyOrder ?? (sequenced.has(index.columns[0] ?? '') ? 'ascending' : DEFAULT_KEY_ORDER),
      fillfactor: index.fillfactor ?? (index.method === 'hash' ? HASH_DEFAULT_FILLFACTOR : BTREE_DEFAULT_FILLFACTOR),
      share: index.method === 'brin' ? 0 : 1,
      ...(gin && { gin }),
      assumptions: own,
      columns: indexColumns,
    }
  })
  assumptions.push(...indexes.flatMap((index) => index.assumptions))
  const sequences = sequenced.size
  return {
    table: description.name,
    columns,
    indexes,
    fillfactor: description.fillfactor,
    walLevel: description.walLevel,
    blockSize: BLOCK_SIZE,
    sequences,
    unlogged: description.unlogged,
    temporary: false,
    volatileDefault: false,
    toast: { valuesPerRow: 0, bytesPerRow: 0 },
    assumptions,
  }
}

/** Column types a GiST operator class stores as another (point_ops: a box). */
const GIST_STORED_TYPES: Record<string, string> = { point: 'box' }

const brinAssumption = (name: string) =>
  `${name}: BRIN predicted 0: rows added past its last summarised range write nothing until VACUUM or brin_summarize_new_values summarises them; rows landing in a summarised range (the last, partial one after CREATE INDEX) update its summary`

async function modelFromCatalog(session: Session, name: string): Promise<TableModel> {
  const server = await readServer(session)
  const table = await resolveTable(session, name)
  const assumptions: string[] = []
  const tableRows = table.estimatedRows
  const columns = table.columns.map((column): ColumnLayout => {
    const fallback = typeLayout(column.typeName)?.width ?? 17
    if (column.length < 0 && column.avgWidth === null)
      assumptions.push(`${column.name}: no statistics, assumed ${fallback} bytes a value; run ANALYZE ${table.quoted}`)
    return {
      name: column.name,
      length: column.length,
      align: column.align,
      avgWidth: column.avgWidth ?? (column.length > 0 ? column.length : fallback),
      nullFraction: column.nullFraction,
    }
  })
  const byAttnum = new Map(
    table.columns.map((column, i) => [column.attnum, { layout: columns[i] as ColumnLayout, stats: column }]),
  )
  const sample = await sampleTable(session, table)
  const indexes = table.indexes.map((index): IndexModel => {
    const own: string[] = []
    const shape = sample.indexes.get(index.oid)
    const expressionWidths = [...(shape?.expressionWidths ?? [])]
    const layouts = index.columns.map((attnum) => {
      const member = byAttnum.get(attnum)
      if (member) return member.layout
      const width = expressionWidths.shift()
      if (width === undefined || width === null) own.push(`${index.name}: an expression key, assumed 8 bytes`)
      else own.push(`${index.name}: an expression key of ${roundOne(width)} bytes a value on a sample of the table`)
      return { name: '?', length: -1, align: 'i' as const, avgWidth: width ?? 8, nullFraction: 0 }
    })
    if (index.method === 'brin') own.push(brinAssumption(index.name))
    else if (!MODELLED_METHODS.has(index.method))
      own.push(`${index.name}: ${index.method} index estimated as a B-tree of the same keys`)
    // A GiST leaf stores its operator class's key type where it has one (point: a 32-byte box).
    const keyLengths = shape?.gistKeyLengths
    const keys = keyLengths
      ? layouts.map((layout, k) => {
          const length = keyLengths[k]
          return length && length > 0 ? { ...layout, length, avgWidth: length, nullFraction: 0 } : layout
        })
      : layouts
    if (shape?.predicateShare !== undefined)
      own.push(
        `${index.name}: partial, taking ${percent(shape.predicateShare)} of rows (its predicate on a sample of the table)`,
      )
    const keyStats = index.columns.slice(0, index.keyCount).map((attnum) => byAttnum.get(attnum)?.stats)
    const fillfactor =
      index.fillfactor ?? (index.method === 'hash' ? HASH_DEFAULT_FILLFACTOR : BTREE_DEFAULT_FILLFACTOR)
    const keyOrder = keyOrderFromStats(
      keyStats,
      index.unique,
      tableRows,
      leafCapacity(indexTupleSize(layouts), server.facts.blockSize),
    )
    const [leading] = keyStats
    if (keyOrder === 'random' && estimatedAsBtree(index.method) && leading && leading.correlation === null)
      own.push(`${index.name}: no statistics on the order of its keys; run ANALYZE ${table.quoted}`)
    assumptions.push(...own)
    return {
      name: index.name,
      method: index.method,
      columns: keys,
      keyOrder,
      fillfactor,
      share: index.method === 'brin' ? 0 : (shape?.predicateShare ?? 1),
      ...(shape?.gin && { gin: shape.gin }),
      ...(shape?.rangeArrival && { gist: { arrival: shape.rangeArrival, tableRows } }),
      assumptions: own,
    }
  })
  assumptions.push(...(await otherRelationWrites(session, table)))
  const { toast } = sample
  if (toast.valuesPerRow > 0) {
    assumptions.push(
      `TOAST: ${roundOne(toast.valuesPerRow)} values a row stored out of line, ${integer(toast.bytesPerRow)} bytes a row, on a sample of the table`,
    )
  }
  return {
    table: table.quoted,
    columns,
    indexes,
    fillfactor: table.fillfactor,
    walLevel: server.facts.walLevel,
    blockSize: server.facts.blockSize,
    sequences: table.columns.filter((column) => column.sequenced).length,
    unlogged: table.unlogged,
    temporary: table.temporary,
    volatileDefault: table.columns.some((column) => column.volatileDefault),
    toast,
    assumptions,
  }
}

/**
 * Where new keys land, from pg_stats: a leading column filled from a sequence is ascending; few
 * distinct keys are deduplicated rather than split; a leading column that follows the physical
 * order (time) is ascending; a trailing one is
 * ascending within groups, which either span many pages (grouped) or share pages (interleaved);
 * anything else random.
 */
function keyOrderFromStats(
  keys: Array<Column | undefined>,
  unique: boolean,
  tableRows: number,
  capacity: number,
): KeyOrder {
  const distinct = (column: Column | undefined) =>
    column?.distinct === null || column?.distinct === undefined
      ? tableRows
      : column.distinct < 0
        ? -column.distinct * tableRows
        : column.distinct
  const distinctKeys = Math.min(
    tableRows,
    keys.reduce((product, column) => product * Math.max(1, distinct(column)), 1),
  )
  const [leading] = keys
  // A sequence (identity, serial) hands out ascending values whatever the statistics say so far.
  if (leading?.sequenced) return 'ascending'
  if (!unique && tableRows > 0 && distinctKeys * 10 <= tableRows) return 'duplicate-keys'
  const trailing = keys.at(-1)
  if ((leading?.correlation ?? 0) >= 0.9) return 'ascending'
  // Splitting after the new item (nbtsplitloc.c) needs equal-sized tuples: fixed-width keys.
  if (keys.length > 1 && (trailing?.correlation ?? 0) >= 0.9 && keys.every((column) => (column?.length ?? -1) > 0)) {
    const pagesPerGroup = tableRows / Math.max(1, distinct(leading)) / capacity
    return pagesPerGroup >= 8 ? 'grouped-ascending' : 'interleaved'
  }
  return 'random'
}

/** How an index's leaf pages split as keys arrive: rows between splits and tuples moved right, in pages' worth. */
const SPLITS: Record<
  KeyOrder,
  { rowsPerSplit: (fill: number) => number; moved: (fill: number) => number; sibling: number } | null
> = {
  // Rightmost split: the left page keeps fillfactor, the new right page gets the rest.
  ascending: { rowsPerSplit: (fill) => fill, moved: (fill) => 1 - fill, sibling: 0 },
  // Split after the new item at the end of a group: the same, with a right sibling.
  'grouped-ascending': { rowsPerSplit: (fill) => fill, moved: (fill) => 1 - fill, sibling: 8 },
  // Groups sharing pages: measured on the field notes' (device_id, time) index.
  interleaved: { rowsPerSplit: () => 0.5, moved: () => 0.37, sibling: 8 },
  // Random keys: 50:50 splits, leaves ln 2 full on average.
  random: { rowsPerSplit: () => Math.LN2, moved: () => 0.5, sibling: 8 },
  // Deduplication merges equal keys into posting lists instead of splitting.
  'duplicate-keys': null,
}

function leafCapacity(tupleSize: number, blockSize: number): number {
  const slot = tupleSize + LINE_POINTER
  return Math.floor((blockSize - PAGE_HEADER - BTREE_SPECIAL - slot) / slot)
}

type PredictedIndex = IndexPrediction & { alignedPerRow: number; methodAssumptions: string[] }

function predictIndex(index: IndexModel, blockSize: number): PredictedIndex {
  const method = predictMethod(index, blockSize)
  const { share } = index
  return {
    name: index.name,
    bytesPerRow: share * method.bytesPerRow,
    alignedPerRow: share * method.alignedPerRow,
    recordsPerRow: share * method.recordsPerRow,
    tupleSize: method.tupleSize,
    splitsPerRow: share * method.splitsPerRow,
    imageBytesPerRow: share * method.imageBytesPerRow,
    keyOrder: estimatedAsBtree(index.method) ? index.keyOrder : null,
    exact: index.method === 'btree',
    share,
    assumptions: index.assumptions,
    methodAssumptions: method.assumptions,
  }
}

const estimatedAsBtree = (method: string) => method === 'btree' || !MODELLED_METHODS.has(method)

function predictMethod(index: IndexModel, blockSize: number): MethodPrediction {
  switch (index.method) {
    case 'gin':
      return index.gin ? predictGin(index.name, index.gin, blockSize) : predictBtree(index, blockSize)
    case 'gist':
      return predictGist(index.name, indexTupleSize(index.columns), blockSize, index.gist ?? null)
    case 'hash':
      return predictHash(index.name, index.fillfactor, blockSize)
    default:
      return predictBtree(index, blockSize)
  }
}

function predictBtree(index: IndexModel, blockSize: number): MethodPrediction {
  const tupleSize = indexTupleSize(index.columns)
  const capacity = leafCapacity(tupleSize, blockSize)
  const fill = index.fillfactor / 100
  const splits = SPLITS[index.keyOrder]
  const splitsPerRow = splits ? 1 / (splits.rowsPerSplit(fill) * capacity) : 0
  // INSERT_LEAF: 24 + 20 block ref + 2 + 2 offset + the tuple. A split record replaces it: 24 + block
  // refs + 2 + 10 xl_btree_split + the left high key + the tuples moved right and the new one.
  const leaf = 48 + tupleSize
  const split = splits ? 64 + splits.sibling + tupleSize + (splits.moved(fill) * capacity + 1) * tupleSize : 0
  const upper = 56 + tupleSize
  // Index tuples are MAXALIGNed, so these records are too.
  const bytesPerRow = leaf * (1 - splitsPerRow) + splitsPerRow * (split + upper)
  return {
    bytesPerRow,
    alignedPerRow: bytesPerRow,
    recordsPerRow: 1 + splitsPerRow,
    tupleSize,
    splitsPerRow,
    imageBytesPerRow: 0,
    assumptions:
      index.keyOrder === 'ascending'
        ? []
        : [`${index.name}: keys taken as ${index.keyOrder}, so its page splits are estimated`],
  }
}

function predictHeap(
  model: TableModel,
  method: InsertCostPrediction['method'],
  { tupleLength, onPage, insertRecordAligned }: HeapTupleSizes,
) {
  // COPY buffers rows for heap_multi_insert only when no default is volatile (copyfrom.c).
  if (method !== 'copy' || model.volatileDefault) {
    // XLOG_HEAP_INSERT: 24 header + 20 block ref + 2 + 3 xl_heap_insert + 5 xl_heap_header + tuple after its header.
    return { bytesPerRow: tupleLength + 31, alignedPerRow: insertRecordAligned, recordsPerRow: 1 }
  }
  // XLOG_HEAP2_MULTI_INSERT: one record a page a buffer flush; a flush's first record continues
  // the previous flush's page, so it carries its tuples' offsets.
  const saveFree = (model.blockSize * (100 - model.fillfactor)) / 100
  const perPage = Math.min(
    MAX_HEAP_TUPLES_PER_PAGE,
    Math.floor((model.blockSize - PAGE_HEADER - saveFree) / (onPage + LINE_POINTER)),
  )
  const perFlush = Math.min(COPY_BUFFERED_TUPLES, Math.floor(COPY_BUFFERED_BYTES / tupleLength))
  const recordsPerRow = 1 / perPage + 1 / perFlush
  const overhead = 24 + 20 + 2 + 4
  const bytes = shortAlign(tupleLength - 16) + overhead * recordsPerRow + perPage / perFlush
  return { bytesPerRow: bytes, alignedPerRow: bytes + 4 * recordsPerRow, recordsPerRow }
}

function predict(
  model: TableModel,
  method: InsertCostPrediction['method'],
  rowsPerCommit: number | null,
): InsertCostPrediction {
  const tuple = heapTupleSizes(model.columns)
  // An unlogged table's rows, indexes and (15+) owned sequences write no WAL.
  const logged = model.unlogged || model.temporary ? 0 : 1
  const written = <T extends { bytesPerRow: number; alignedPerRow: number; recordsPerRow: number }>(part: T): T => ({
    ...part,
    bytesPerRow: part.bytesPerRow * logged,
    alignedPerRow: part.alignedPerRow * logged,
    recordsPerRow: part.recordsPerRow * logged,
    ...('imageBytesPerRow' in part && { imageBytesPerRow: Number(part.imageBytesPerRow) * logged }),
  })
  const heap = written(withToast(predictHeap(model, method, tuple), model.toast))
  const indexes = model.indexes.map((index) => written(predictIndex(index, model.blockSize)))
  const commit = model.walLevel === 'logical' ? 46 : 34
  const commitPerRow = rowsPerCommit === null ? 0 : maxAlign(commit) / rowsPerCommit
  // XLOG_SEQ_LOG: 24 + 20 block ref + 2 + 12 xl_seq_rec + a 41-byte sequence tuple, every 33 values.
  const sequences = model.sequences * logged
  const sequencePerRow = (sequences * maxAlign(99)) / 33
  const recordBytes = heap.bytesPerRow + indexes.reduce((sum, index) => sum + index.bytesPerRow, 0)
  const imageBytes = indexes.reduce((sum, index) => sum + index.imageBytesPerRow, 0)
  const aligned =
    heap.alignedPerRow +
    indexes.reduce((sum, index) => sum + index.alignedPerRow + index.imageBytesPerRow, 0) +
    commitPerRow +
    sequencePerRow
  const bytesPerRow = (aligned * model.blockSize) / (model.blockSize - XLOG_SHORT_PAGE_HEADER)
  const logicalBytesPerRow = logicalRowBytes(model.columns)
  const assumptions = [...model.assumptions]
  for (const index of indexes) {
    index.assumptions = [...index.assumptions, ...index.methodAssumptions]
    assumptions.push(...index.methodAssumptions)
  }
  if (rowsPerCommit === null) assumptions.push('one transaction for the whole batch: commit records not counted')
  if (model.unlogged)
    assumptions.push('unlogged: its rows, indexes and owned sequences write no WAL; a crash empties it')
  if (model.temporary) assumptions.push('temporary: its rows, indexes and owned sequences write no WAL')
  if (model.toast.valuesPerRow === 0)
    assumptions.push('no TOAST: values over ~2 kB are stored out of line and cost more')
  if (method === 'copy' && model.volatileDefault)
    assumptions.push('a default calls a volatile function, so COPY inserts row by row: one heap record a row')
  assumptions.push(
    'steady state: no images of pages changed after a checkpoint (the first change to each page after one adds one)',
    'no B-tree deduplication: indexes with many duplicate keys write DEDUP records and smaller tuples',
  )
  return {
    kind: 'prediction',
    table: model.table,
    method,
    rowsPerCommit,
    bytesPerRow,
    recordsPerRow:
      heap.recordsPerRow +
      indexes.reduce((sum, index) => sum + index.recordsPerRow, 0) +
      (rowsPerCommit === null ? 0 : 1 / rowsPerCommit) +
      sequences / 33,
    logicalBytesPerRow,
    amplification: logicalBytesPerRow > 0 ? bytesPerRow / logicalBytesPerRow : 0,
    tuple: { tupleLength: tuple.tupleLength, onPage: tuple.onPage },
    breakdown: {
      heapBytes: heap.bytesPerRow,
      indexBytes: indexes.reduce((sum, index) => sum + index.bytesPerRow, 0),
      fpiBytes: imageBytes,
      otherBytes: bytesPerRow - recordBytes - imageBytes,
    },
    heap: { bytesPerRow: heap.bytesPerRow, recordsPerRow: heap.recordsPerRow },
    indexes: indexes.map(({ alignedPerRow: _aligned, methodAssumptions: _method, ...index }) => index),
    assumptions,
  }
}

// A TOAST chunk holds at most this much of a value (TOAST_MAX_CHUNK_SIZE for 8 kB pages); its tuple
// adds a 24-byte header, chunk_id, chunk_seq and the data's 4-byte varlena header.
const TOAST_CHUNK_BYTES = 1996
const TOAST_CHUNK_OVERHEAD = 24 + 4 + 4 + 4
// A value is stored out of line when, compressed, it is still over about this size (TOAST_TUPLE_TARGET).
const TOAST_EXTERNAL_BYTES = 2000
// The TOAST index's key (chunk_id, chunk_seq): an 8-byte header and 8 bytes of key, INSERT_LEAF 48 + 16.
const TOAST_INDEX_RECORD = 64

/**
 * The TOAST table's records, added to the heap's as a measurement counts them: per chunk of each
 * out-of-line value, a heap insert of the chunk and an entry in the TOAST index.
 */
function withToast<T extends { bytesPerRow: number; alignedPerRow: number; recordsPerRow: number }>(
  heap: T,
  toast: TableModel['toast'],
): T {
  if (toast.valuesPerRow === 0) return heap
  const valueBytes = toast.bytesPerRow / toast.valuesPerRow
  const chunks = toast.valuesPerRow * Math.ceil(valueBytes / TOAST_CHUNK_BYTES)
  // XLOG_HEAP_INSERT of a chunk: the tuple (after its 23-byte header) + 31, as for the table's rows.
  const records = toast.bytesPerRow + chunks * (TOAST_CHUNK_OVERHEAD + 31 + TOAST_INDEX_RECORD)
  return {
    ...heap,
    bytesPerRow: heap.bytesPerRow + records,
    // The chunk record's 8-byte alignment adds about half an alignment on average; the index record is aligned.
    alignedPerRow: heap.alignedPerRow + records + chunks * 4,
    recordsPerRow: heap.recordsPerRow + 2 * chunks,
  }
}

/** What a sample of the table says about each index, beyond the catalog's statistics. */
interface SampledIndex {
  /** A partial index's share of rows: its predicate on the sample. */
  predicateShare?: number
  /** Average pg_column_size of each expression key, in key order. */
  expressionWidths: Array<number | null>
  gin?: GinShape
  /** A GiST index's stored key width per column, where its operator class names one (point: a 32-byte box). */
  gistKeyLengths?: Array<number | null>
  /** A GiST index led by a range: how its ranges arrive. */
  rangeArrival?: RangeArrival
}

interface TableSample {
  indexes: Map<string, SampledIndex>
  /** Values stored out of line (TOAST) a row, and their stored bytes: what avg_width (a pointer's 18 bytes) hides. */
  toast: TableModel['toast']
}

/** Rows of the table a sample reads, in pages' worth (TABLESAMPLE SYSTEM, repeatable). */
const SAMPLE_ROWS = 5_000

/** The key columns of the table's GIN and GiST indexes, with their operator classes. */
async function invertedAndSpatialKeys(session: Session, table: Table) {
  return session.query<{
    oid: string
    method: string
    columns: number
    column: string | null
    expression: string | null
    opclass: string
    element_length: number | null
    element_string: boolean | null
    key_length: number | null
    fastupdate: boolean
    pending_limit: string
    work_mem: string
  }>(
    `select i.indexrelid::text as oid, am.amname::text as method, i.indnkeyatts::int as columns, a.attname::text as column,
            case when k.attnum = 0 then pg_get_indexdef(i.indexrelid, k.position::int, true) end as expression,
            opc.opcname::text as opclass, et.typlen::int as element_length,
            (et.typcategory = 'S' or et.oid = 'bytea'::regtype) as element_string,
            case when opc.opckeytype <> 0 then kt.typlen::int end as key_length,
            not exists (select 1 from unnest(c.reloptions) o where o ~* '^fastupdate=(off|of|false|fals|fal|fa|f|no|n|0)$') as fastupdate,
            coalesce((select pg_size_bytes(substring(o from '=(.*)$') || 'kB') from unnest(c.reloptions) o where o like 'gin_pending_list_limit=%'),
                     pg_size_bytes(current_setting('gin_pending_list_limit')))::text as pending_limit,
            pg_size_bytes(current_setting('work_mem'))::text as work_mem
       from pg_index i join pg_class c on c.oid = i.indexrelid join pg_am am on am.oid = c.relam
       cross join lateral unnest(i.indkey::int2[], i.indclass::oid[]) with ordinality as k(attnum, opclass_oid, position)
       join pg_opclass opc on opc.oid = k.opclass_oid
       left join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum and k.attnum > 0
       left join pg_type at on at.oid = a.atttypid
       left join pg_type et on et.oid = at.typelem and at.typcategory = 'A'
       left join pg_type kt on kt.oid = opc.opckeytype
      where i.indrelid = $1::oid and am.amname in ('gin', 'gist') and k.position <= i.indnkeyatts
      order by i.indexrelid, k.position`,
    [table.oid],
  )
}

/** GiST operator classes of ranges and multiranges, whose keys are the values' bounds. */
const RANGE_OPCLASSES = new Set(['range_ops', 'multirange_ops'])

/** An index key as SQL on the table's row: its column, or its expression. */
const keyValue = (key: { column: string | null; expression: string | null }) =>
  key.expression ? `(${key.expression})` : quoteIdent(key.column ?? '')

/** Rows before a range that a leaf's key (and a parent's) covers, from the key's width in the table's statistics. */
function rangeWindows(table: Table, key: { column: string | null }) {
  const width = table.columns.find((column) => column.name === key.column)?.avgWidth ?? 32
  const leafRows = ASCENDING_LEAF_SHARE * gistCapacity(maxAlign(8 + width), BLOCK_SIZE)
  return { leafRows, treeRows: 10 * leafRows }
}

/**
 * One scan of a sample of the table for what the catalog's statistics cannot say: each partial
 * index's predicate, each expression key's width, each GIN column's entries, and the values stored
 * out of line.
 */
async function sampleTable(session: Session, table: Table): Promise<TableSample> {
  const shapes = await session.query<{ oid: string; predicate: string | null; expressions: string[] }>(
    `select i.indexrelid::text as oid, pg_get_expr(i.indpred, i.indrelid, true) as predicate,
            array(select pg_get_indexdef(i.indexrelid, k, true) from generate_series(1, i.indnatts) k
                   where i.indkey[k - 1] = 0 order by k) as expressions
       from pg_index i where i.indrelid = $1::oid`,
    [table.oid],
  )
  const keys = await invertedAndSpatialKeys(session, table)
  const gins = keys.filter((key) => key.method === 'gin')
  const ginColumns = gins.map(
    (key): GinColumn => ({
      column: key.column,
      expression: key.expression,
      opclass: key.opclass,
      element:
        key.element_length === null
          ? null
          : key.element_length > 0
            ? key.element_length
            : key.element_string
              ? 'string'
              : 'varlena',
      indexColumns: key.columns,
    }),
  )
  const entries = ginColumns.map(ginEntriesSql)
  const varlena = table.columns.filter((column) => column.length < 0)
  const stored = (column: Column) => `pg_column_size(${quoteIdent(column.name)})`
  const external = table.toastOid === null ? [] : varlena.map((column) => `${stored(column)} > ${TOAST_EXTERNAL_BYTES}`)
  // Predicates, expressions and GIN keys are the server's own SQL (pg_get_expr, pg_get_indexdef) on the table's columns.
  const measures = [
    'count(*)::float8 as n',
    ...(external.length > 0
      ? [
          `(${external.map((test) => `count(*) filter (where ${test})`).join(' + ')})::float8 as toast_values`,
          `(${external.map((test, i) => `coalesce(sum(${stored(varlena[i] as Column)}) filter (where ${test}), 0)`).join(' + ')})::float8 as toast_bytes`,
        ]
      : []),
    ...shapes.flatMap((shape, i) => [
      ...(shape.predicate ? [`count(*) filter (where ${shape.predicate})::float8 as p${i}`] : []),
      ...shape.expressions.map((expression, k) => `avg(pg_column_size((${expression})))::float8 as e${i}_${k}`),
    ]),
    ...gins.flatMap((key, g) => [
      `avg(greatest(g${g}.n, 1))::float8 as gn${g}`,
      `avg(case when g${g}.n = 0 then ${ginPlaceholderBytes(key.columns)} else g${g}.b end)::float8 as gb${g}`,
    ]),
  ]
  const [row] = await session.query<Record<string, number | null>>(
    `select ${measures.join(', ')} from ${table.quoted} tablesample system ($1) repeatable (0)${entries.map(({ sql }, g) => ` cross join lateral (${sql}) g${g}`).join('')}`,
    [samplePercent(table, SAMPLE_ROWS)],
  )
  const rows = row?.n ?? 0
  const perRow = (name: string) => (rows > 0 ? (row?.[name] ?? 0) / rows : 0)
  const indexes = new Map<string, SampledIndex>()
  for (const [i, shape] of shapes.entries()) {
    const own = keys.filter((key) => key.oid === shape.oid)
    const ginIndexColumns = gins.flatMap((key, g) => (key.oid === shape.oid ? [g] : []))
    const first = own[0]
    // What a row costs in the tree, alone or in a pending list's merge, depends on its keys' posting lists: read on the table's end.
    const postings =
      first?.method === 'gin'
        ? await sampleGinPostings(
            session,
            table,
            ginIndexColumns.map((g) => ginColumns[g] as GinColumn),
            samplePercent(table, SAMPLE_ROWS),
          )
        : null
    const rangeArrival =
      first?.method === 'gist' && RANGE_OPCLASSES.has(first.opclass)
        ? await sampleRangeArrival(session, table, keyValue(first), rangeWindows(table, first))
        : undefined
    indexes.set(shape.oid, {
      ...(shape.predicate && rows > 0 && { predicateShare: perRow(`p${i}`) }),
      expressionWidths: shape.expressions.map((_, k) => row?.[`e${i}_${k}`] ?? null),
      ...(first?.method === 'gin' && {
        gin: {
          entriesPerRow: ginIndexColumns.reduce((sum, g) => sum + (row?.[`gn${g}`] ?? 1), 0),
          entryBytesPerRow: ginIndexColumns.reduce((sum, g) => sum + (row?.[`gb${g}`] ?? 0), 0),
          fastupdate: first.fastupdate,
          pendingLimitBytes: Number(first.pending_limit),
          mergeMemoryBytes: Number(first.work_mem),
          unsampled: ginIndexColumns.flatMap((g) => (entries[g]?.counted ? [] : [gins[g]?.opclass ?? ''])),
          postings,
        },
      }),
      ...(first?.method === 'gist' && { gistKeyLengths: own.map((key) => key.key_length) }),
      ...(rangeArrival && { rangeArrival }),
    })
  }
  return { indexes, toast: { valuesPerRow: perRow('toast_values'), bytesPerRow: perRow('toast_bytes') } }
}

/** What the prediction leaves out: writes the table's triggers and foreign keys cause in other relations. */
async function otherRelationWrites(session: Session, table: Table): Promise<string[]> {
  const triggers = await session.query<{ name: string }>(
    `select tgname::text as name from pg_trigger where tgrelid = $1::oid and not tgisinternal order by tgname`,
    [table.oid],
  )
  return [
    ...triggers.map(
      ({ name }) =>
        `trigger ${name}: what it writes to other relations is not predicted (measureInsertCost names each relation it writes)`,
    ),
    ...table.foreignKeys.map(
      (key) =>
        `foreign key ${key.name}: each parent row it references is locked once a transaction (Heap/LOCK on ${key.parent}), not predicted`,
    ),
  ]
}

export interface PredictionComparison {
  /**
   * errorPct: (predicted - measured) / measured in percent; 0 when both are 0, and null when only the
   * prediction is (a part measured at nothing: an index the batch never touched, an unlogged table).
   */
  parts: Array<{ part: string; predicted: number; measured: number; errorPct: number | null }>
  /** Steady-state WAL per row: the measurement's bytes per row without its image bytes. */
  total: { predicted: number; measured: number; errorPct: number | null }
}

/**
 * A prediction side by side with a measurement, per part (bytes per row, images left out of the
 * measurement since the prediction is for steady state), with the error in percent.
 *
 * @example
 * const { total, parts } = comparePrediction(await predictInsertCost({ db, table }), await measureInsertCost({ db, table, count: 10_000 }))
 */
export function comparePrediction(prediction: InsertCostPrediction, measurement: InsertCost): PredictionComparison {
  if (!measurement.breakdown || measurement.rows === 0) {
    throw new WalcostError(
      'INVALID_OPTIONS',
      "measurement: it needs rows and the split by relation (attribution 'walinspect') to be compared part by part.",
      { field: 'measurement' },
    )
  }
  const rows = measurement.rows
  const error = (predicted: number, measured: number) =>
    measured !== 0 ? (100 * (predicted - measured)) / measured : predicted === 0 ? 0 : null
  const row = (part: string, predicted: number, measured: number) => ({
    part,
    predicted,
    measured,
    errorPct: error(predicted, measured),
  })
  const parts = [
    row('heap', prediction.breakdown.heapBytes, measurement.breakdown.heapBytes / rows),
    ...prediction.indexes.map((index) => {
      const measured = measurement.indexes.find((entry) => entry.name === index.name)
      return row(
        `index ${index.name}`,
        index.bytesPerRow,
        measured ? (measured.walBytes - measured.fpiBytes) / rows : 0,
      )
    }),
    row('other', prediction.breakdown.otherBytes, measurement.breakdown.otherBytes / rows),
  ]
  const measuredTotal = (measurement.walBytes - measurement.breakdown.fpiBytes) / rows
  const predictedTotal = prediction.bytesPerRow - prediction.breakdown.fpiBytes
  return {
    parts,
    total: {
      predicted: predictedTotal,
      measured: measuredTotal,
      errorPct: error(predictedTotal, measuredTotal),
    },
  }
}
